package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// capabilityType declares the capability check type.
func capabilityType() Type {
	return Type{
		Name: "capability", Args: []string{"capabilities"},
		Doc: "the capabilities (`NET_ADMIN`, `cap_net_raw`) are in the effective set of the checking process",
		Options: []Option{
			{Name: "capabilities", Kind: Strings, Required: true, Arg: "CAP", Doc: "capability names"},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.Capability(checks.CapabilityOptions{Names: v.Strings("capabilities")})
		},
	}
}

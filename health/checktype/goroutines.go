package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// goroutinesType declares the goroutines check type.
func goroutinesType() Type {
	return Type{
		Name: "goroutines", InProcess: true,
		Doc: "the checking process runs at most `max` goroutines (a steady climb is a leak)",
		Options: []Option{
			{Name: "max", Kind: Int, Required: true, Arg: "N", Doc: "most goroutines allowed"},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.Goroutines(checks.GoroutinesOptions{Max: int(v.Int("max"))})
		},
	}
}

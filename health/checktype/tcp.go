package checktype

import (
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// tcpType declares the tcp check type.
func tcpType() Type {
	return Type{
		Name: "tcp", Args: []string{"address"}, Timeout: 5 * time.Second, SelfTimed: true,
		Doc: "a TCP connection opens",
		Options: []Option{
			{Name: "address", Required: true, Arg: "HOST:PORT", Doc: "host:port to dial"},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.TCP(checks.TCPOptions{Address: v.String("address"), Timeout: v.Timeout()})
		},
	}
}

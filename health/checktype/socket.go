package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// socketType declares the socket check type.
func socketType() Type {
	return Type{
		Name: "socket", Args: []string{"process", "path"},
		Doc: "a process matching PROCESS holds the unix socket bound to PATH (`@name` for an abstract socket)",
		Options: []Option{
			{Name: "process", Doc: "process that must hold the socket (any process when empty)"},
			{Name: "path", Required: true, Doc: "path the socket is bound to"},
			cmdline,
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.UnixSocket(checks.UnixSocketOptions{Path: v.String("path"),
				Process: processMatch(v)})
		},
	}
}

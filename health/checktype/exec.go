package checktype

import (
	"time"

	"github.com/vitalsproject/vitals/health/checks"
)

// execType declares the exec check type.
func execType() Type {
	return Type{
		Name: "exec", Args: []string{"command"}, Rest: true, Timeout: 10 * time.Second, SelfTimed: true,
		Doc: "COMMAND exits with `exit_code`; its output (up to 4 KiB) is the reason otherwise; at the timeout its whole process group is killed",
		Options: []Option{
			{Name: "command", Kind: Strings, Required: true, Arg: "COMMAND", Doc: "program (looked up in PATH) and its arguments"},
			{Name: "env", Kind: Strings, Arg: "KEY=VALUE", Doc: "environment of the command (replaces the inherited one)"},
			{Name: "dir", Arg: "DIR", Doc: "working directory"},
			{Name: "exit_code", Kind: Int, Default: "0", Arg: "N", Doc: "exit code that counts as healthy"},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.Exec(checks.ExecOptions{Command: v.Strings("command"), Env: v.Strings("env"), Dir: v.String("dir"),
				ExitCode: int(v.Int("exit_code")), Timeout: v.Timeout()})
		},
	}
}

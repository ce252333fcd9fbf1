package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// processType declares the process check type.
func processType() Type {
	return Type{
		Name: "process", Args: []string{"process"},
		Doc: "a process matching PROCESS runs (never the checking process itself)",
		Options: []Option{
			{Name: "process", Required: true, Doc: "command name, argv[0] or script base name"},
			cmdline,
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.Process(checks.ProcessOptions{Match: processMatch(v)})
		},
	}
}

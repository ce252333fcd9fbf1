package checktype

import (
	"github.com/vitalsproject/vitals/health/checks"
)

// fileType declares the file check type.
func fileType() Type {
	return Type{
		Name: "file", Args: []string{"path"},
		Doc: "PATH exists and was modified within `max_age` (a heartbeat file), and at most 5s in the future (clock skew): a future time is never fresh for ever",
		Options: []Option{
			{Name: "path", Required: true, Doc: "the file"},
			{Name: "max_age", Kind: Duration, Default: "60s", Arg: "AGE", Doc: "most time since the last modification"},
		},
		New: func(v *Values) (checks.Func, error) {
			return checks.File(checks.FileOptions{Path: v.String("path"), MaxAge: v.Duration("max_age")})
		},
	}
}

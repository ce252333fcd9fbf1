package clirun

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/config"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		format, level string
		want          string // in the output of an Info and a Debug line
		wantErr       string
	}{
		{"text", "info", `level=INFO msg=hello k=v`, ""},
		{"TEXT", "DEBUG", `level=DEBUG msg=quiet`, ""},
		{"json", "info", `{"time":`, ""},
		{"json", "warn", "", ""},
		{"yaml", "info", "", `--log-format: expected text or json, got "yaml"`},
		{"text", "loud", "", `--log-level: expected debug, info, warn or error, got "loud"`},
	}
	for _, tc := range tests {
		t.Run(tc.format+"/"+tc.level, func(t *testing.T) {
			var b bytes.Buffer
			log, err := NewLogger(&b, tc.format, tc.level)
			if tc.wantErr != "" {
				var cerr *config.Error
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &cerr) {
					t.Fatalf("err = %v, want *config.Error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello", "k", "v")
			log.Debug("quiet")
			if tc.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tc.want) {
				t.Fatalf("output %q, want %q", b.String(), tc.want)
			}
		})
	}
}

package clirun

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/vitalsproject/vitals/config"
)

// LogFlags are the --log-format and --log-level flags every command that runs for long has.
type LogFlags struct {
	Format string
	Level  string
}

// Log formats and levels, as --log-format and --log-level take them.
var (
	logFormats = []string{"text", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

// AddLogFlags registers --log-format (default format: text or json) and --log-level (default info)
// on cmd, with completion of their values.
func AddLogFlags(cmd *cobra.Command, format string) *LogFlags {
	l := &LogFlags{}
	fs := cmd.Flags()
	fs.StringVar(&l.Format, "log-format", format, "log format: text or json")
	fs.StringVar(&l.Level, "log-level", "info", "log level: debug, info, warn or error")
	CompleteValues(cmd, "log-format", logFormats...)
	CompleteValues(cmd, "log-level", logLevels...)
	return l
}

// Logger builds the process's logger on w (stderr) and routes klog, which the Kubernetes client
// libraries log through, to it. A bad format or level is a *config.Error naming the flag.
func (l *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	log, err := NewLogger(w, l.Format, l.Level)
	if err != nil {
		return nil, err
	}
	klog.SetLogger(logr.FromSlogHandler(log.Handler()))
	return log, nil
}

// NewLogger is Vitals' one logger factory: log/slog's text or JSON handler on w at level (debug,
// info, warn or error; any case).
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, &config.Error{Field: "--log-level", Msg: fmt.Sprintf("expected debug, info, warn or error, got %q", level)}
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, &config.Error{Field: "--log-format", Msg: fmt.Sprintf("expected text or json, got %q", format)}
}

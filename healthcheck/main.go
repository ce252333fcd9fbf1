package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/internal/base/bounded"
	"github.com/vitalsproject/vitals/internal/base/version"
)

// DefaultConfigPath is the YAML file read when the command runs with no arguments (as
// /openstack/healthcheck does) and HEALTHCHECK_CONFIG is not set.
const DefaultConfigPath = "/etc/healthcheck.yaml"

// The config file is read only when it is a regular file of at most MaxConfigSize bytes, read within
// ConfigTimeout: a config pointing at /dev/zero, a named pipe or a huge file is an invalid check (exit 1), not
// a process that grows or hangs in every container.
const (
	MaxConfigSize = 1 << 20
	ConfigTimeout = 2 * time.Second
)

// Main runs the command: argv with the program name first, an environment, and the streams. It
// returns the exit code: 0 healthy, 1 unhealthy or invalid. It writes exactly one line on stdout
// (except for --help); on stderr, one warning per deprecated spelling used and, with
// HEALTHCHECK_DEBUG=1, details.
func Main(ctx context.Context, argv []string, env Env, stdout, stderr io.Writer) int {
	debug := truthy(env("HEALTHCHECK_DEBUG"))
	logf := func(format string, a ...any) {
		if debug {
			fmt.Fprintf(stderr, "healthcheck: "+format+"\n", a...)
		}
	}
	if len(argv) == 2 && argv[1] == "--version" {
		fmt.Fprintf(stdout, "%s %s\n", filepath.Base(argv[0]), version.Get().Line())
		return 0
	}
	cs, err := load(ctx, argv, env, logf)
	if errors.Is(err, ErrHelp) {
		fmt.Fprint(stdout, Usage())
		return 0
	}
	if err != nil {
		logf("invalid: %v", err)
		fmt.Fprintln(stdout, InvalidLine(err))
		return 1
	}
	warned := map[string]bool{}
	for _, c := range cs {
		for _, w := range c.Warnings {
			if !warned[w] {
				warned[w] = true
				fmt.Fprintf(stderr, "healthcheck: warning: %s\n", w)
			}
		}
	}
	if reaper := startReaper(cs, logf); reaper != nil {
		defer func() {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if n := reaper.Stop(rctx); n > 0 {
				logf("killed %d processes the exec checks left running", n)
			}
		}()
	}
	rs := Run(ctx, cs, time.Now)
	for _, r := range rs {
		if r.Err != nil {
			logf("%s: FAILED after %s: %v", strings.Join(r.Check.Args, " "), r.Duration, r.Err)
		} else {
			logf("%s: ok after %s: %s", strings.Join(r.Check.Args, " "), r.Duration, r.Detail)
		}
	}
	fmt.Fprintln(stdout, Line(rs)) // a closed stdout must not change the verdict
	if Healthy(rs) {
		return 0
	}
	return 1
}

// startReaper makes the command a child subreaper when a check runs commands, so that what they
// leave behind, in whatever group or session (setsid), is killed and reaped before it exits
// instead of living on in the container.
func startReaper(cs []Check, logf func(string, ...any)) *checks.Reaper {
	for _, c := range cs {
		if c.Kind == "exec" {
			r, err := checks.StartReaper(0)
			if err != nil {
				logf("%v", err)
				return nil
			}
			return r
		}
	}
	return nil
}

// load finds the checks: from the arguments, from --config FILE, or, with no arguments (how
// /openstack/healthcheck runs), from $HEALTHCHECK_CONFIG or DefaultConfigPath.
func load(ctx context.Context, argv []string, env Env, logf func(string, ...any)) ([]Check, error) {
	var args []string
	if len(argv) > 0 {
		args = argv[1:]
	}
	if len(args) > 0 {
		if path, ok := configFlag(args); ok {
			if path == "" || len(args) > 2 || (len(args) == 2 && strings.Contains(args[0], "=")) {
				return nil, errors.New("--config takes one FILE and nothing else")
			}
			return loadConfig(ctx, path, env, logf)
		}
		return ParseArgs(args, env)
	}
	if path := env("HEALTHCHECK_CONFIG"); path != "" {
		return loadConfig(ctx, path, env, logf)
	}
	cs, err := loadConfig(ctx, DefaultConfigPath, env, logf)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no check given and no config (" + DefaultConfigPath + " or $HEALTHCHECK_CONFIG); try: healthcheck --help")
	}
	return cs, err
}

func configFlag(args []string) (string, bool) {
	switch a := args[0]; {
	case a == "--config" || a == "-config" || a == "-c":
		if len(args) < 2 {
			return "", true
		}
		return args[1], true
	case strings.HasPrefix(a, "--config="):
		return strings.TrimPrefix(a, "--config="), true
	}
	return "", false
}

func loadConfig(ctx context.Context, path string, env Env, logf func(string, ...any)) ([]Check, error) {
	logf("config %s", path)
	ctx, cancel := context.WithTimeout(ctx, ConfigTimeout)
	defer cancel()
	data, err := bounded.ReadFile(ctx, path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cs, err := ParseConfig(data, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vitalsproject/vitals/internal/cli/agentcmd"
	"github.com/vitalsproject/vitals/internal/cli/cloudsimcmd"
)

// complete runs the hidden __complete command of a binary (what the completion scripts call) and
// returns its candidates and directive.
func complete(t *testing.T, main func([]string, io.Writer, io.Writer) int, args ...string) ([]string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := main(append([]string{"__complete"}, args...), &out, &errb); code != 0 {
		t.Fatalf("__complete %v: exit %d\n%s", args, code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var cands []string
	for _, l := range lines[:len(lines)-1] {
		cand, _, _ := strings.Cut(l, "\t") // a description follows a tab
		cands = append(cands, cand)
	}
	return cands, lines[len(lines)-1]
}

// Directives of __complete (cobra.ShellCompDirective), as its last line prints them.
const (
	anyFile    = ":0"  // file names (the shell's default)
	noFiles    = ":4"  // the values only
	extensions = ":8"  // the candidates are the file extensions to complete
	dirs       = ":16" // directory names
)

func TestFlagValueCompletion(t *testing.T) {
	vitalsMain := Main
	tests := []struct {
		main      func([]string, io.Writer, io.Writer) int
		args      []string
		want      []string
		directive string
	}{
		{vitalsMain, []string{"version", "-o", ""}, []string{"text", "json", "yaml"}, noFiles},
		{vitalsMain, []string{"doctor", "x", "--output", ""}, []string{"text", "json", "yaml"}, noFiles},
		{vitalsMain, []string{"routes", "audit", "-o", ""}, []string{"text", "json", "yaml"}, noFiles},
		{vitalsMain, []string{"deorbit", "-o", ""}, []string{"text", "json", "yaml"}, noFiles},
		{vitalsMain, []string{"routes", "audit", "--sources", ""}, []string{"ports", "servers"}, noFiles},
		{vitalsMain, []string{"operator", "--log-format", ""}, []string{"text", "json"}, noFiles},
		{vitalsMain, []string{"operator", "--log-level", ""}, []string{"debug", "info", "warn", "error"}, noFiles},
		{vitalsMain, []string{"serve", "--log-level", ""}, []string{"debug", "info", "warn", "error"}, noFiles},
		{vitalsMain, []string{"agent", "--cni-failure-mode", ""}, []string{"window", "consecutive"}, noFiles},
		{vitalsMain, []string{"agent", "--memory-source", ""}, []string{"auto", "cgroup", "rss"}, noFiles},
		{vitalsMain, []string{"agent", "--socket-mode", ""}, []string{"0600", "0660"}, noFiles},
		{vitalsMain, []string{"agent", "report", "--op", ""}, []string{"ADD", "DEL", "CHECK"}, noFiles},
		{vitalsMain, []string{"agent", "report", "--result", ""}, []string{"success", "failure"}, noFiles},
		{agentcmd.Main, []string{"--log-format", ""}, []string{"text", "json"}, noFiles},
		{cloudsimcmd.Main, []string{"--log-level", ""}, []string{"debug", "info", "warn", "error"}, noFiles},
		// Files: the candidates are the extensions the shell filters by.
		{vitalsMain, []string{"serve", "--config", ""}, []string{"yaml", "yml"}, extensions},
		{vitalsMain, []string{"operator", "--config", ""}, []string{"conf", "ini"}, extensions},
		{vitalsMain, []string{"agent", "--config-file", ""}, []string{"conf", "ini"}, extensions},
		{vitalsMain, []string{"deorbit", "--state", ""}, []string{"json"}, extensions},
		{vitalsMain, []string{"doctor", "x", "--kubeconfig", ""}, nil, anyFile},
		{cloudsimcmd.Main, []string{"--seed-file", ""}, []string{"yaml", "yml", "json"}, extensions},
		{cloudsimcmd.Main, []string{"--state", ""}, []string{"json"}, extensions},
		{vitalsMain, []string{"agent", "--cni-conf-dir", ""}, nil, dirs},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, directive := complete(t, tc.main, tc.args...)
			if !slices.Equal(got, tc.want) || directive != tc.directive {
				t.Errorf("candidates %q, directive %s; want %q, %s", got, directive, tc.want, tc.directive)
			}
		})
	}
	// --cloud: the clouds of the clouds.yaml --cloud would read.
	cy := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(cy, []byte("clouds:\n  prod: {auth: {auth_url: https://k.example/v3}}\n  lab: {auth: {auth_url: https://l.example/v3}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OS_CLIENT_CONFIG_FILE", cy)
	for _, args := range [][]string{{"doctor", "x", "--cloud", ""}, {"routes", "audit", "--cloud", ""}, {"deorbit", "--os-cloud", ""}, {"operator", "--cloud", ""}} {
		if got, directive := complete(t, vitalsMain, args...); !slices.Equal(got, []string{"lab", "prod"}) || directive != noFiles {
			t.Errorf("%v: candidates %q, directive %s; want the clouds lab and prod", args, got, directive)
		}
	}
	// The capabilities the agent's check knows, NET_ADMIN among them.
	if got, _ := complete(t, vitalsMain, "agent", "--capabilities", ""); !slices.Contains(got, "NET_ADMIN") || !slices.Contains(got, "SYS_ADMIN") {
		t.Errorf("agent --capabilities: candidates %q, want the capability names", got)
	}
}

// enumerated finds the flags whose help lists their values: "output format: text, json or yaml",
// "success or failure (required)", "a: x (why) or y", "ports and/or servers".
var enumerated = regexp.MustCompile(`(?:^|: )[\w.-]+(?: \([^)]*\))?(?:, [\w.-]+(?: \([^)]*\))?)*,? (?:or|and/or) [\w.-]+`)

// fileLike finds the flags that name a file or a directory.
var fileLike = regexp.MustCompile(`\b(?:file|directory|path)\b|kubeconfig`)

// TestEveryEnumeratedFlagCompletes walks every command of every binary built on cobra: a flag whose
// help lists its values must complete them, and a flag naming a file or directory must complete
// file names. A new flag without completion fails here.
func TestEveryEnumeratedFlagCompletes(t *testing.T) {
	var out bytes.Buffer
	roots := []*cobra.Command{NewRootCommand(&out, &out), agentcmd.NewCommand("vitals-agent"), cloudsimcmd.NewCommand(&out, &out)}
	seen := map[string]bool{}
	for _, root := range roots {
		walk(root, func(cmd *cobra.Command) {
			cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" || f.Value.Type() == "bool" {
					return
				}
				_, hasFunc := cmd.GetFlagCompletionFunc(f.Name)
				_, hasExt := f.Annotations[cobra.BashCompFilenameExt]
				_, hasDir := f.Annotations[cobra.BashCompSubdirsInDir]
				where := cmd.CommandPath() + " --" + f.Name
				switch {
				case enumerated.MatchString(f.Usage):
					seen["enumerated"] = true
					if !hasFunc && !hasExt {
						t.Errorf("%s: its help lists values (%q) but it completes none: clirun.CompleteValues", where, f.Usage)
					}
				case fileLike.MatchString(f.Name + " " + f.Usage):
					seen["file"] = true
					if !hasFunc && !hasExt && !hasDir {
						t.Errorf("%s: it names a file or directory (%q) but completes no file names: clirun.CompleteFiles or CompleteDirs", where, f.Usage)
					}
				}
			})
		})
	}
	if !seen["enumerated"] || !seen["file"] {
		t.Errorf("the walk found no enumerated or no file flag (%v): the patterns no longer match the help texts", seen)
	}
}

func walk(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walk(c, f)
	}
}

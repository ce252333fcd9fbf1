package cli

// Every configuration snippet of the README, docs/*.md, the chart's README and the commands' --help is
// run through the loader that would read it: INI files through the operator's and the agent's option
// loaders, YAML through the VitalsCluster type (strict), vitals serve's and the container healthcheck's
// loaders and the simulator's seed loader, the agent's socket JSON through its report type, and the
// command lines of our binaries through their commands' flag parsing (make targets against the
// Makefile). Commands of other tools (kubectl, helm, socat, ...) are listed, not run. A snippet that is
// a fragment on purpose says so on the line before its fence: <!-- snippet: partial: why -->; it is
// then only parsed (YAML or INI syntax).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/healthcheck"
	"github.com/vitalsproject/vitals/internal/cli/agentcmd"
	"github.com/vitalsproject/vitals/internal/cli/cloudsimcmd"
	"github.com/vitalsproject/vitals/serve"
)

// snippet is one fenced code block of a document, or a configuration example of a command's help.
type snippet struct {
	where   string // file:line
	lang    string // ini, yaml, json, sh, "" (a transcript: "$ " lines are commands)
	body    string
	partial string // why it is a fragment ("" : whole)
}

var (
	fenceRe   = regexp.MustCompile("^\\s*```(\\S*)\\s*$")
	partialRe = regexp.MustCompile(`^<!-- snippet: partial: (.+) -->$`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// docSnippets returns the fenced blocks of the README, docs/*.md and the chart's README.
func docSnippets(t *testing.T) []snippet {
	t.Helper()
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "deploy", "chart", "vitals", "README.md"))
	var out []snippet
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			m := fenceRe.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			s := snippet{where: fmt.Sprintf("%s:%d", rel, i+1), lang: m[1]}
			if i > 0 {
				if p := partialRe.FindStringSubmatch(strings.TrimSpace(lines[i-1])); p != nil {
					s.partial = p[1]
				}
			}
			var body []string
			for i++; i < len(lines) && !fenceRe.MatchString(lines[i]); i++ {
				body = append(body, lines[i])
			}
			s.body = strings.Join(body, "\n") + "\n"
			out = append(out, s)
		}
	}
	return out
}

// helpSnippets returns the INI examples of the commands' long help (the indented lines from a
// "[section]" line to the first line that is not indented) and each command's Examples (command lines).
func helpSnippets(t *testing.T) []snippet {
	t.Helper()
	var out []snippet
	examples := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines := strings.Split(c.Long, "\n")
		for i := 0; i < len(lines); i++ {
			if !regexp.MustCompile(`^  \[[a-z_]+\]`).MatchString(lines[i]) {
				continue
			}
			start := i
			var body []string
			for ; i < len(lines) && (strings.HasPrefix(lines[i], "  ") || lines[i] == ""); i++ {
				body = append(body, strings.TrimPrefix(lines[i], "  "))
			}
			out = append(out, snippet{where: fmt.Sprintf("%s --help, line %d", c.CommandPath(), start+1), lang: "ini", body: strings.Join(body, "\n") + "\n"})
		}
		// The Examples section: command lines, parsed as a shell block is.
		if c.Example != "" {
			out = append(out, snippet{where: c.CommandPath() + " --help, Examples", lang: "sh", body: c.Example + "\n"})
			examples++
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{}))
	walk(agentcmd.NewCommand("vitals-agent"))
	walk(cloudsimcmd.NewCommand(&bytes.Buffer{}, &bytes.Buffer{}))
	if len(out) == examples {
		t.Fatal("no INI example in any command's help: the extraction is broken")
	}
	if examples < 5 {
		t.Fatalf("%d commands with examples in their help: the extraction is broken", examples)
	}
	return out
}

func TestSnippets(t *testing.T) {
	checked := 0
	for _, s := range append(docSnippets(t), helpSnippets(t)...) {
		t.Run(s.where, func(t *testing.T) {
			var err error
			switch s.lang {
			case "ini":
				err = checkINI(t, s)
			case "yaml":
				err = checkYAML(t, s)
			case "json":
				err = checkJSON(s)
			case "sh", "":
				err = checkShell(t, s)
			default:
				t.Logf("%s: a %s block: not a configuration", s.where, s.lang)
				return
			}
			if err != nil {
				t.Errorf("%s (%s) fails as written: %v\n%s", s.where, s.lang, err, s.body)
			}
			checked++
		})
	}
	t.Logf("%d snippets checked", checked)
}

func checkINI(t *testing.T, s snippet) error {
	t.Helper()
	f, err := config.ParseINI(s.where, []byte(s.body))
	if err != nil || s.partial != "" {
		return err
	}
	path := writeFile(t, "snippet.conf", s.body)
	switch {
	case f.HasSection("operator") || f.HasSection("kubernetes") || f.HasSection("health_server"):
		// The kubeconfig the example names does not exist here: the flag (which wins) names one that does.
		fl, fs := flagsOf(t, []string{"--config", path, "--kubeconfig", writeFile(t, "kubeconfig", testKubeconfig)})
		_, err := fl.options(fs, &bytes.Buffer{}, func(string) string { return "" })
		return err
	case f.HasSection("cni_health_server") || f.HasSection("cni_daemon") || f.HasSection("pod_network_connectivity"):
		o := agent.DefaultOptions()
		if _, err := agent.ApplyKuryrINI(path, &o); err != nil {
			return err
		}
		o.NodeName = "node-1" // from the downward API
		return o.Validate()
	}
	return fmt.Errorf("no loader reads sections %v", f.Sections())
}

func checkJSON(s snippet) error {
	if s.partial != "" {
		if !json.Valid([]byte(s.body)) {
			return fmt.Errorf("not JSON")
		}
		return nil
	}
	var r cnireport.Report // what the agent's socket reads
	dec := json.NewDecoder(strings.NewReader(s.body))
	dec.DisallowUnknownFields()
	return dec.Decode(&r)
}

func checkYAML(t *testing.T, s snippet) error {
	t.Helper()
	if docs := strings.Split(s.body, "\n---\n"); len(docs) > 1 {
		for i, d := range docs {
			one := s
			one.body = d
			if err := checkYAML(t, one); err != nil {
				return fmt.Errorf("document %d: %w", i+1, err)
			}
		}
		return nil
	}
	var generic map[string]any
	if err := yaml.Unmarshal([]byte(s.body), &generic); err != nil || s.partial != "" {
		return err
	}
	switch {
	case generic["apiVersion"] == v1alpha1.GroupVersion.String() && generic["kind"] == "VitalsRemediationTemplate":
		var tpl v1alpha1.VitalsRemediationTemplate
		return yaml.UnmarshalStrict([]byte(s.body), &tpl)
	case generic["apiVersion"] == clusterv1.GroupVersion.String() && generic["kind"] == "MachineHealthCheck":
		var mhc clusterv1.MachineHealthCheck
		return yaml.UnmarshalStrict([]byte(s.body), &mhc)
	case generic["apiVersion"] == v1alpha1.GroupVersion.String():
		var vc v1alpha1.VitalsCluster
		return yaml.UnmarshalStrict([]byte(s.body), &vc)
	case generic["livenessProbe"] != nil || generic["readinessProbe"] != nil:
		var c corev1.Container // the probes of a container
		return yaml.UnmarshalStrict([]byte(s.body), &c)
	case generic["listen"] != nil:
		_, err := serve.Parse(s.where, []byte(s.body))
		return err
	case generic["checks"] != nil:
		_, err := healthcheck.ParseConfig([]byte(s.body), func(string) string { return "" })
		return err
	case generic["projects"] != nil || generic["clusters"] != nil:
		return cloudsimcmd.CheckSeedFile(writeFile(t, "seed.yaml", s.body))
	}
	return fmt.Errorf("no loader reads a YAML document with keys %v", keys(generic))
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	return k
}

// shellWords splits a command line as sh would (quotes, backslash line continuations joined before),
// up to an unquoted comment, pipe, redirection or separator.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case strings.IndexByte("#|&;><", c) >= 0 && !inWord:
			return words
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// checkShell parses every command of a shell block (or the "$ " lines of a transcript) with the command
// it runs: ours through their flags, make targets against the Makefile; others are listed.
func checkShell(t *testing.T, s snippet) error {
	t.Helper()
	text := strings.ReplaceAll(s.body, "\\\n", " ")
	makefile, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if s.lang == "" {
			if !strings.HasPrefix(line, "$ ") {
				continue // output
			}
			line = line[2:]
		}
		words := shellWords(strings.TrimSpace(line))
		if len(words) == 0 {
			continue
		}
		var cmd *cobra.Command
		switch bin := filepath.Base(words[0]); bin {
		case "vitals":
			cmd = NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
		case "vitals-agent":
			cmd = agentcmd.NewCommand("vitals-agent")
		case "vitals-cloudsim":
			cmd = cloudsimcmd.NewCommand(&bytes.Buffer{}, &bytes.Buffer{})
		case "healthcheck":
			if _, err := healthcheck.ParseArgs(words[1:], func(string) string { return "" }); err != nil {
				return fmt.Errorf("%s: %w", line, err)
			}
			continue
		case "make":
			args := words[1:]
			for i := 0; i < len(args); i++ {
				target := args[i]
				switch {
				case target == "-C" || target == "-f": // make -C DIR (the checkout): its argument is no target
					i++
					continue
				case strings.HasPrefix(target, "-") || strings.Contains(target, "="):
					continue
				}
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
					return fmt.Errorf("%s: no make target %q", line, target)
				}
			}
			continue
		default:
			if strings.HasPrefix(words[0], "hack/") {
				if _, err := os.Stat(filepath.Join(repoRoot(t), words[0])); err != nil {
					return fmt.Errorf("%s: %w", line, err)
				}
			} else if strings.HasSuffix(s.where, "Examples") {
				return fmt.Errorf("%s: an example of our help that runs none of our commands", line)
			} else {
				t.Logf("%s: not ours, not run: %s", s.where, line)
			}
			continue
		}
		// As Execute does: the help and completion commands cobra adds.
		cmd.InitDefaultHelpCmd()
		cmd.InitDefaultCompletionCmd(words[1:]...)
		sub, args, err := cmd.Find(words[1:])
		if err != nil {
			return fmt.Errorf("%s: %w", line, err)
		}
		if err := sub.ParseFlags(args); err != nil {
			return fmt.Errorf("%s: %w", line, err)
		}
		if err := sub.ValidateArgs(sub.Flags().Args()); err != nil {
			return fmt.Errorf("%s: %w", line, err)
		}
	}
	return nil
}

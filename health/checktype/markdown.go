package checktype

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Markdown renders the registry's types as a Markdown table for a frontend's documentation: with
// flags ("--ca-file FILE") for the command line, or with YAML keys ("ca_file") for a config file.
// The docs hold it between SectionBegin and SectionEnd; tests keep them equal.
func (r *Registry) Markdown(flags bool) string {
	var b strings.Builder
	if flags {
		b.WriteString("| check | options | passes when |\n|---|---|---|\n")
	} else {
		b.WriteString("| type | parameters (required in bold) | passes when |\n|---|---|---|\n")
	}
	for _, name := range r.names {
		t := r.types[name]
		var opts []string
		for _, o := range t.Options {
			if flags && t.IsArg(o.Name) && o.Default == "" {
				continue // shown in the form itself
			}
			opts = append(opts, optionDoc(&o, flags))
		}
		first := "`" + name + "`"
		if flags {
			first = "`" + strings.TrimSpace(name+" "+t.Usage()) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", first, strings.Join(opts, "<br>"), t.Doc)
	}
	return b.String()
}

func optionDoc(o *Option, flags bool) string {
	name := "`" + o.Name + "`"
	if flags {
		name = "`" + Flag(o.Name)
		if o.Kind != Bool {
			name += " " + o.ArgName()
		}
		name += "`"
	}
	if o.Required && !flags {
		name = "**" + name + "**"
	}
	s := name + ": " + o.Doc
	if o.Default != "" && o.Kind != Bool || o.Default == "true" {
		s += " (default `" + o.Default + "`)"
	}
	var old, short []string
	for _, a := range o.Aliases {
		sp := a.Name
		if flags {
			sp = Flag(a.Name)
		}
		sp = "`" + sp + "`"
		if a.Value != "" {
			full := o.Name + ": " + a.Value
			if flags {
				full = Flag(o.Name) + " " + a.Value
			}
			sp += " (`" + full + "`)"
		}
		if a.Deprecated {
			old = append(old, sp)
		} else if flags {
			short = append(short, sp)
		}
	}
	if len(short) > 0 {
		s += "; also " + strings.Join(short, ", ")
	}
	if len(old) > 0 {
		s += "; deprecated: " + strings.Join(old, ", ")
	}
	return s
}

// SectionBegin and SectionEnd enclose a generated table in a Markdown document.
const (
	SectionBegin = "<!-- check types: generated from health/checktype; edit the declarations, not this table -->\n"
	SectionEnd   = "<!-- end of check types -->\n"
)

// SyncDoc compares the generated section of the Markdown file at path with table; with write it
// rewrites the section instead. It reports whether they differed.
func SyncDoc(path, table string, write bool) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	doc, err := ReplaceSection(string(data), table)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if doc == string(data) {
		return false, nil
	}
	if write {
		return true, os.WriteFile(path, []byte(doc), 0o644)
	}
	return true, nil
}

// ReplaceSection returns doc with the text between SectionBegin and SectionEnd replaced by table.
func ReplaceSection(doc, table string) (string, error) {
	i := strings.Index(doc, SectionBegin)
	j := strings.Index(doc, SectionEnd)
	if i < 0 || j < i {
		return "", errors.New("no generated check-type section")
	}
	return doc[:i+len(SectionBegin)] + table + doc[j:], nil
}

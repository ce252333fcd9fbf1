package healthcheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a small, strict YAML reader for the config file: block mappings and sequences,
// flow sequences of scalars ([a, "b"]), plain, single- and double-quoted scalars, and comments.
// Anything else (anchors, tags, block scalars, flow mappings, multi-line scalars) is refused with
// the line number. It exists because a general YAML library costs this binary, which runs every
// few seconds in every container, about 0.4 ms of package init and 0.4 MB; a differential fuzz
// test checks that whatever it accepts, go.yaml.in/yaml/v3 reads the same way.

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	listNode
	mapNode
)

// node is a parsed YAML value.
type node struct {
	kind  nodeKind
	value string // scalar text
	null  bool   // a plain null (empty, ~, null)
	line  int
	items []*node // list items; for a map: key, value, key, value...
}

// yamlLine is one meaningful line, split into its parts.
type yamlLine struct {
	num    int
	indent int   // column of the first character (a dash, or the content)
	dash   bool  // a sequence entry "- ..."
	col    int   // column of the content after the dash
	key    *node // "key:" present
	value  *node // the inline value after "key:" or the entry, nil when none
}

type yamlError struct {
	line int
	msg  string
}

func (e *yamlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func yamlErrf(line int, format string, a ...any) error {
	return &yamlError{line: line, msg: fmt.Sprintf(format, a...)}
}

// parseYAML parses a document; an empty one is a null node.
func parseYAML(data []byte) (*node, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	for i, r := range text {
		if !printable(r) {
			line := strings.Count(text[:i], "\n") + 1
			return nil, yamlErrf(line, "character %U is not allowed", r)
		}
	}
	var lines []yamlLine
	started := false
	for i, raw := range strings.Split(text, "\n") {
		num := i + 1
		if strings.Trim(raw, " ") == "" || strings.HasPrefix(strings.TrimLeft(raw, " "), "#") {
			continue
		}
		if !started && strings.TrimRight(raw, " ") == "---" {
			started = true
			continue
		}
		started = true
		l, err := splitLine(raw, num)
		if err != nil {
			return nil, err
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return &node{kind: scalarNode, null: true, line: 1}, nil
	}
	p := &yamlParser{lines: lines}
	if lines[0].indent != 0 {
		return nil, yamlErrf(lines[0].num, "the document must start at column 0")
	}
	n, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, yamlErrf(p.lines[p.i].num, "unexpected indentation or content")
	}
	return n, nil
}

type yamlParser struct {
	lines []yamlLine
	i     int
}

// block parses the block at the current line, whose indentation is ind.
func (p *yamlParser) block(ind int) (*node, error) {
	l := p.lines[p.i]
	if l.dash {
		return p.list(ind)
	}
	if l.key != nil {
		return p.mapping(ind)
	}
	p.i++
	if p.i < len(p.lines) && p.lines[p.i].indent > ind {
		return nil, yamlErrf(p.lines[p.i].num, "unexpected indentation")
	}
	return l.value, nil
}

func (p *yamlParser) list(ind int) (*node, error) {
	n := &node{kind: listNode, line: p.lines[p.i].num}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < ind {
			break
		}
		if l.indent > ind || !l.dash {
			return nil, yamlErrf(l.num, "expected a list entry \"- ...\" at column %d", ind)
		}
		var item *node
		var err error
		switch {
		case l.key != nil:
			// "- key: value": a mapping whose keys sit at the content column.
			p.lines[p.i].dash, p.lines[p.i].indent = false, l.col
			item, err = p.mapping(l.col)
		case l.value != nil:
			item = l.value
			p.i++
			if p.i < len(p.lines) && p.lines[p.i].indent > ind {
				return nil, yamlErrf(p.lines[p.i].num, "unexpected indentation")
			}
		default:
			p.i++
			if p.i < len(p.lines) && p.lines[p.i].indent > ind {
				item, err = p.block(p.lines[p.i].indent)
			} else {
				item = &node{kind: scalarNode, null: true, line: l.num}
			}
		}
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, item)
	}
	return n, nil
}

func (p *yamlParser) mapping(ind int) (*node, error) {
	n := &node{kind: mapNode, line: p.lines[p.i].num}
	seen := map[string]bool{}
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < ind {
			break
		}
		if l.indent > ind || l.dash || l.key == nil {
			return nil, yamlErrf(l.num, "expected \"key: value\" at column %d", ind)
		}
		if seen[l.key.value] {
			return nil, yamlErrf(l.num, "key %q repeated", l.key.value)
		}
		seen[l.key.value] = true
		p.i++
		val := l.value
		if val == nil {
			next := len(p.lines) > p.i
			switch {
			case next && p.lines[p.i].indent > ind:
				v, err := p.block(p.lines[p.i].indent)
				if err != nil {
					return nil, err
				}
				val = v
			case next && p.lines[p.i].indent == ind && p.lines[p.i].dash:
				v, err := p.list(ind) // "key:\n- a\n- b"
				if err != nil {
					return nil, err
				}
				val = v
			default:
				val = &node{kind: scalarNode, null: true, line: l.num}
			}
		} else if p.i < len(p.lines) && p.lines[p.i].indent > ind {
			return nil, yamlErrf(p.lines[p.i].num, "unexpected indentation")
		}
		n.items = append(n.items, l.key, val)
	}
	return n, nil
}

// splitLine parses one line: indentation, an optional "- ", an optional "key:", a value, a comment.
func splitLine(raw string, num int) (yamlLine, error) {
	l := yamlLine{num: num}
	if strings.ContainsRune(raw, '\t') {
		return l, yamlErrf(num, "tabs are not allowed; indent with spaces")
	}
	s := strings.TrimRight(raw, " ")
	if (strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")) && (len(s) == 3 || s[3] == ' ') {
		return l, yamlErrf(num, "only one document is supported")
	}
	pos := len(s) - len(strings.TrimLeft(s, " "))
	l.indent, l.col = pos, pos
	if s[pos] == '-' && (pos+1 == len(s) || s[pos+1] == ' ') {
		l.dash = true
		pos++
		for pos < len(s) && s[pos] == ' ' {
			pos++
		}
		l.col = pos
		if pos == len(s) {
			return l, nil
		}
		if s[pos] == '-' && (pos+1 == len(s) || s[pos+1] == ' ') {
			return l, yamlErrf(num, "nested inline lists are not supported")
		}
	}
	if s[pos] == '#' {
		if l.dash {
			return l, nil
		}
		return l, yamlErrf(num, "unexpected comment")
	}
	if s[pos] == '[' {
		v, end, err := flowList(s, pos, num)
		if err != nil {
			return l, err
		}
		l.value = v
		return l, trailing(s, end, num)
	}
	first, end, err := scalar(s, pos, num, false)
	if err != nil {
		return l, err
	}
	if end < len(s) && s[end] == ':' && (end+1 == len(s) || s[end+1] == ' ') {
		if first.null && !first.quoted() {
			return l, yamlErrf(num, "empty key")
		}
		if end-pos > 1000 { // YAML limits implicit keys to 1024 characters
			return l, yamlErrf(num, "key too long")
		}
		l.key = &node{kind: scalarNode, value: first.value, line: num}
		pos = end + 1
		for pos < len(s) && s[pos] == ' ' {
			pos++
		}
		if pos == len(s) || s[pos] == '#' {
			return l, nil
		}
		if s[pos] == '[' {
			v, end, err := flowList(s, pos, num)
			if err != nil {
				return l, err
			}
			l.value = v
			return l, trailing(s, end, num)
		}
		v, end, err := scalar(s, pos, num, false)
		if err != nil {
			return l, err
		}
		if end < len(s) && s[end] == ':' {
			return l, yamlErrf(num, "a value may not hold \": \" unquoted")
		}
		l.value = v.node
		return l, trailing(s, end, num)
	}
	l.value = first.node
	return l, trailing(s, end, num)
}

// trailing accepts only spaces and a comment after position end.
func trailing(s string, end, num int) error {
	rest := strings.TrimLeft(s[end:], " ")
	if rest == "" || (rest[0] == '#' && len(rest) < len(s[end:])) {
		return nil
	}
	return yamlErrf(num, "unexpected text at column %d", len(s)-len(rest)+1)
}

type scalarResult struct {
	*node
	q byte // quote character, 0 for plain
}

func (r scalarResult) quoted() bool { return r.q != 0 }

// construct names the YAML construct a character starts, for errors that give its position and
// never the text (a file given by mistake, a token, must not be echoed).
func construct(c byte) string {
	switch c {
	case '&':
		return ": an anchor"
	case '*':
		return ": an alias"
	case '!':
		return ": a tag"
	case '|', '>':
		return ": a block scalar"
	case '{', '}':
		return ": a flow mapping"
	}
	return ""
}

// scalar reads a scalar starting at pos; in a flow list it also stops at ',' and ']'.
func scalar(s string, pos, num int, flow bool) (scalarResult, int, error) {
	switch c := s[pos]; c {
	case '"', '\'':
		v, end, err := quoted(s, pos, num)
		if err != nil {
			return scalarResult{}, 0, err
		}
		return scalarResult{&node{kind: scalarNode, value: v, line: num}, c}, end, nil
	case '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return scalarResult{}, 0, yamlErrf(num, "unsupported YAML at column %d (%q%s; use plain or quoted values)", pos+1, c, construct(c))
	case '?', ':':
		return scalarResult{}, 0, yamlErrf(num, "unsupported YAML at column %d (%q; quote the value)", pos+1, c)
	case '-':
		if pos+1 == len(s) || s[pos+1] == ' ' || (flow && strings.IndexByte(",[]{}", s[pos+1]) >= 0) {
			return scalarResult{}, 0, yamlErrf(num, "unsupported YAML at column %d (a list item where a value goes)", pos+1)
		}
	}
	end := pos
	for end < len(s) {
		c := s[end]
		if c == ':' && (end+1 == len(s) || s[end+1] == ' ' || (flow && strings.IndexByte(",[]{}", s[end+1]) >= 0)) {
			break
		}
		if c == '#' && s[end-1] == ' ' {
			break
		}
		if flow && strings.IndexByte(",[]{}", c) >= 0 {
			break
		}
		end++
	}
	v := strings.TrimRight(s[pos:end], " ")
	n := &node{kind: scalarNode, value: v, line: num}
	switch v {
	case "", "~", "null", "Null", "NULL":
		n.null = true
	}
	return scalarResult{n, 0}, end, nil
}

// quoted reads a single- or double-quoted scalar that ends on the same line.
func quoted(s string, pos, num int) (string, int, error) {
	q := s[pos]
	var b strings.Builder
	for i := pos + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 >= len(s) {
				return "", 0, yamlErrf(num, "unterminated escape")
			}
			i++
			switch e := s[i]; e {
			case '\\', '"', '/':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'x', 'u', 'U':
				size := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+size >= len(s) {
					return "", 0, yamlErrf(num, "short \\%c escape", e)
				}
				r, err := strconv.ParseUint(s[i+1:i+1+size], 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", 0, yamlErrf(num, "bad \\%c escape", e)
				}
				b.WriteRune(rune(r))
				i += size
			default:
				return "", 0, yamlErrf(num, "unsupported escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, yamlErrf(num, "unterminated quoted value (values must fit on one line)")
}

// flowList reads "[a, 'b', c]" of scalars.
func flowList(s string, pos, num int) (*node, int, error) {
	n := &node{kind: listNode, line: num}
	i := pos + 1
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return nil, 0, yamlErrf(num, "unterminated [list] (lists must fit on one line)")
		}
		if s[i] == ']' && len(n.items) == 0 {
			return n, i + 1, nil
		}
		v, end, err := scalar(s, i, num, true)
		if err != nil {
			return nil, 0, err
		}
		if v.null && !v.quoted() {
			return nil, 0, yamlErrf(num, "empty entry in [list]")
		}
		n.items = append(n.items, v.node)
		i = end
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return nil, 0, yamlErrf(num, "unterminated [list]")
		}
		switch s[i] {
		case ',':
			i++
		case ']':
			return n, i + 1, nil
		default:
			return nil, 0, yamlErrf(num, "unexpected text at column %d in [list]", i+1)
		}
	}
}

// printable: YAML's allowed characters, without the byte order mark, the lone carriage return
// and the Unicode line breaks.
func printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r >= 0x80 && r <= 0x9f: // C1 controls and NEL, a line break to YAML 1.1
		return false
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return false
	case r >= 0xd800 && r <= 0xdfff, r == 0xfeff, r == 0xfffe, r == 0xffff:
		return false
	}
	return true
}

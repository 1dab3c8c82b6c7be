package units

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a unit or config file: larger files are refused
// before parsing, so that a stray log renamed to .yaml cannot stall a load.
const MaxFileSize = 1 << 20

// decoder maps YAML nodes onto Go values and collects errors with their
// positions. It never stops at the first error: a file gets every problem
// reported at once.
type decoder struct {
	file string // as given, for messages
	dir  string // absolute directory of the file, for relative paths
	errs Errors
}

func (d *decoder) errf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxMsg {
		msg = cut(msg, maxMsg)
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Msg: msg, Err: ErrInvalid})
}

// field is one known key of a mapping, with the nodes of key and value.
type field struct {
	name string // the key
	path string // the key with its block, for messages: "timeouts.start"
	key  *yaml.Node
	val  *yaml.Node
	want Value // what the key takes, from its table: the readers' bounds and forms
}

// keyed is the one list of a block's keys, in the order the canonical
// rendering writes them, each with what it takes (its Value: the kind,
// bounds and words its readers apply, and its meaning) and its decoder
// into the block's value v. The keys the decoder accepts there are
// derived from it, and so are the JSON Schemas (UnitKeys, ConfigKeys):
// a key cannot be accepted without being decoded and described. Rules
// that join several keys of a block run after decode, on the fields it
// returns.
type keyed[V any] []struct {
	key    string
	want   Value
	decode func(d *decoder, v V, f field)
}

func (k keyed[V]) names() []string {
	ks := make([]string, len(k))
	for i, e := range k {
		ks[i] = e.key
	}
	return ks
}

// shape is the table's keys with what each takes, for the schema package.
func (k keyed[V]) shape() []Key {
	ks := make([]Key, len(k))
	for i, e := range k {
		ks[i] = Key{Name: e.key, Value: e.want}
	}
	return ks
}

// decode decodes the mapping n (the block at path block, "" for a file's
// root) into v, each known key through its decoder in the file's order,
// and returns the known fields n held.
func (k keyed[V]) decode(d *decoder, n *yaml.Node, block string, v V) []field {
	fields := d.mapping(n, block, k.names())
	for i := range fields {
		k.one(d, v, &fields[i])
	}
	return fields
}

// lift makes k, a table of the keys of a part of V (found by part),
// decode into V: a block whose keys two tables share (Exec's, in a unit
// file and in defaults:).
func lift[V, P any](k keyed[P], part func(V) P) keyed[V] {
	out := make(keyed[V], len(k))
	for i, e := range k {
		out[i].key, out[i].want = e.key, e.want
		out[i].decode = func(d *decoder, v V, f field) { e.decode(d, part(v), f) }
	}
	return out
}

// one decodes f into v when it is one of k's keys, and reports whether it
// was: for a block whose other keys decode elsewhere. It sets f.want.
func (k keyed[V]) one(d *decoder, v V, f *field) bool {
	for _, e := range k {
		if e.key == f.name {
			f.want = e.want
			e.decode(d, v, *f)
			return true
		}
	}
	return false
}

// yamlSyntax extracts the line from go.yaml.in/yaml/v3 syntax errors,
// which are plain errors of the form "yaml: line N: message" (the package
// exports no typed syntax error).
var yamlSyntax = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// parseDocument checks the raw bytes (size, UTF-8, emptiness) and parses
// exactly one YAML document whose root is a mapping. It returns nil after
// recording an error.
func (d *decoder) parseDocument(data []byte, what string) *yaml.Node {
	if len(data) > MaxFileSize {
		d.errs = append(d.errs, &Error{File: d.file, Line: 1, Column: 1, Err: ErrFile,
			Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit for a %s; is it the right file?", len(data), MaxFileSize, what)})
		return nil
	}
	if !utf8.Valid(data) {
		line, col := invalidUTF8At(data)
		d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Err: ErrInvalid,
			Msg: "invalid UTF-8: save the file as UTF-8"})
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		d.errs = append(d.errs, &Error{File: d.file, Line: 1, Column: 1, Err: ErrInvalid,
			Msg: fmt.Sprintf("empty file: a %s needs at least %s", what, map[string]string{"unit": "command: or shell:", "config": "one key, or no file at all"}[what])})
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		d.errs = append(d.errs, &Error{File: d.file, Line: 1, Column: 1, Err: ErrInvalid,
			Msg: fmt.Sprintf("no keys, only comments: a %s needs at least one key", what)})
		return nil
	} else if err != nil {
		d.syntax(err, data)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.errf(&extra, "a second YAML document: a %s file holds exactly one (remove the \"---\")", what)
		return nil
	} else if !errors.Is(err, io.EOF) {
		d.syntax(err, data)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.errf(root, "empty document: a %s needs at least one key", what)
			return nil
		}
		root = root.Content[0]
	}
	root = resolve(root)
	if root.Kind != yaml.MappingNode {
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			d.errf(root, "empty document: a %s needs at least one key", what)
			return nil
		}
		d.errf(root, "a %s file is a mapping of keys (key: value), not %s", what, kindName(root))
		return nil
	}
	return root
}

func (d *decoder) syntax(err error, data []byte) {
	line, col, msg := 1, 1, err.Error()
	if m := yamlSyntax().FindStringSubmatch(msg); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n > 0 {
			line = n
		}
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	// The parser's line is often not the fault's: it reports an unclosed
	// flow list where it gave up (or on line 1), and a tab in indentation
	// as a character that starts no token. Point at the fault itself.
	switch {
	case strings.Contains(msg, "cannot start any token"), strings.Contains(msg, "tab character"):
		if l, c, ok := tabIndent(data, line); ok {
			line, col, msg = l, c, "tabs are not allowed for indentation; use spaces"
		}
	case strings.Contains(msg, "did not find expected ',' or ']'"), strings.Contains(msg, "did not find expected ',' or '}'"):
		if l, c, open, ok := unclosedFlow(data); ok {
			line, col = l, c
			msg = fmt.Sprintf("this %c is never closed (%s)", open, msg)
		}
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Msg: "YAML syntax: " + msg, Err: ErrInvalid})
}

// tabIndent finds a tab in the indentation of line (1-based) of data, else
// of the next line (the parser may report the line before), else of the
// lines before it, and returns its position.
func tabIndent(data []byte, line int) (l, col int, ok bool) {
	lines := strings.Split(string(data), "\n")
	try := func(i int) bool {
		if i < 0 || i >= len(lines) {
			return false
		}
		for j, r := range lines[i] {
			switch r {
			case ' ':
				continue
			case '\t':
				l, col = i+1, j+1
				return true
			}
			return false
		}
		return false
	}
	if try(line-1) || try(line) {
		return l, col, true
	}
	for i := range min(line, len(lines)) {
		if try(i) {
			return l, col, true
		}
	}
	return 0, 0, false
}

// unclosedFlow finds the innermost flow list or mapping ([ or {) of data
// that is never closed, skipping quoted strings and comments, and returns
// where it opens.
func unclosedFlow(data []byte) (line, col int, open rune, ok bool) {
	type opener struct {
		line, col int
		r         rune
	}
	var stack []opener
	line, col = 1, 0
	var quote rune
	comment := false
	prev := '\n'
	for _, r := range string(data) {
		col++
		switch {
		case r == '\n':
			line, col, comment = line+1, 0, false // a quoted string may span lines
		case comment:
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			comment = true
		case (r == '"' || r == '\'') && (prev == ' ' || prev == '[' || prev == '{' || prev == ',' || prev == ':' || prev == '\n'):
			quote = r
		case r == '[' || r == '{':
			stack = append(stack, opener{line, col, r})
		case r == ']' || r == '}':
			if n := len(stack); n > 0 {
				stack = stack[:n-1]
			}
		}
		prev = r
	}
	if len(stack) == 0 {
		return 0, 0, 0, false
	}
	o := stack[len(stack)-1]
	return o.line, o.col, o.r, true
}

func invalidUTF8At(data []byte) (line, col int) {
	line, col = 1, 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		data = data[size:]
	}
	return line, col
}

// resolve follows aliases (*name) to the anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return excerpt(n.Value)
	}
	return "an alias"
}

// mapping returns the fields of n in file order, after checking that n is
// a mapping, that every key is a known one (with a "did you mean" for close
// names) and that no key repeats. block names the mapping in messages.
func (d *decoder) mapping(n *yaml.Node, block string, known []string) []field {
	n = resolve(n)
	prefix := ""
	if block != "" {
		prefix = block + ": "
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // "timeouts:" with nothing after it: no fields
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%swant a mapping (key: value), got %s", prefix, kindName(n))
		return nil
	}
	var out []field
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errf(k, "%sa key must be a plain name, got %s", prefix, kindName(k))
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			d.errf(k, "%skey %s is already set at line %d", prefix, excerpt(k.Value), prev.Line)
			continue
		}
		seen[k.Value] = k
		if !slices.Contains(known, k.Value) {
			msg := fmt.Sprintf("%sunknown key %s", prefix, excerpt(k.Value))
			if s := suggest(k.Value, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
			}
			d.errf(k, "%s", msg)
			continue
		}
		path := k.Value
		if block != "" {
			path = block + "." + k.Value
		}
		out = append(out, field{name: k.Value, path: path, key: k, val: resolve(v)})
	}
	return out
}

// suggest returns the known name closest to s, if it is close enough to be
// a typo: the same name in another case or style (camelCase, kebab-case:
// restartSec and restart-sec are restart_sec),
// within a third of the length in edits (at least 1, at most 3; a swap of
// two neighbours counts as one), or a prefix of at least 4 letters.
func suggest(s string, known []string) string {
	if len(s) > 64 {
		return "" // not a typo of a key; and keeps editDistance small
	}
	norm := snakeCase
	best, bestD := "", 1<<30
	for _, k := range known {
		if norm(k) == norm(s) {
			return k
		}
	}
	for _, k := range known {
		if len(s) >= 4 && (strings.HasPrefix(k, norm(s)) || strings.HasPrefix(norm(s), k)) {
			return k
		}
		if dist := editDistance(s, k); dist < bestD {
			best, bestD = k, dist
		}
	}
	limit := min(max(len(s)/3, 1), 3)
	if bestD <= limit {
		return best
	}
	return ""
}

// snakeCase writes a camelCase, PascalCase or kebab-case name in
// snake_case: restartSec, RestartSec and restart-sec are restart_sec.
func snakeCase(x string) string {
	var b strings.Builder
	var prev rune
	for i, r := range x {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			b.WriteByte('_')
		}
		if r == '-' {
			r = '_'
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			rows[i][j] = min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				rows[i][j] = min(rows[i][j], rows[i-2][j-2]+1)
			}
		}
	}
	return rows[len(a)][len(b)]
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// str reads a scalar as text; an empty value ("key:") is "". A NUL byte
// is refused: no argument, path or environment value the kernel takes can
// carry one (the spawn would fail with EINVAL at every retry).
func (d *decoder) str(f field) string {
	if isNull(f.val) {
		return ""
	}
	if f.val.Kind != yaml.ScalarNode {
		d.errf(f.val, "%s: want a string, got %s", f.path, kindName(f.val))
		return ""
	}
	if strings.ContainsRune(f.val.Value, 0) {
		d.errf(f.val, "%s: holds a NUL byte (\\0), which no program argument or path can carry; remove it", f.path)
		return ""
	}
	return f.val.Value
}

// enum reads a word type's value with its parse (ParseType, ParseRole,
// ...). A value parse refuses is recorded as an error under the key's
// name, and def is kept.
func enum[T ~string](d *decoder, f field, parse func(string) (T, error), def T) T {
	w, err := parse(d.str(f))
	if err != nil {
		d.errf(f.val, "%s: %v", f.name, err)
		return def
	}
	return w
}

// nonEmpty reads a string that must not be empty.
func (d *decoder) nonEmpty(f field) string {
	s := d.str(f)
	if strings.TrimSpace(s) == "" && f.val.Kind == yaml.ScalarNode {
		d.errf(f.val, "%s: must not be empty", f.path)
	}
	return s
}

func (d *decoder) int(f field) (int64, bool) {
	if f.val.Kind != yaml.ScalarNode || f.val.ShortTag() != "!!int" {
		d.errf(f.val, "%s: want a whole number, got %s", f.path, kindName(f.val))
		return 0, false
	}
	var v int64
	if err := f.val.Decode(&v); err != nil {
		d.errf(f.val, "%s: %s is not a whole number in range", f.path, excerpt(f.val.Value))
		return 0, false
	}
	return v, true
}

// count reads an integer in the key's range (f.want's Min to Max).
func (d *decoder) count(f field) int {
	v, ok := d.int(f)
	if !ok {
		return 0
	}
	if lo, hi := f.want.Min, f.want.Max; v < lo || v > hi {
		d.errf(f.val, "%s: %d is out of range; allowed: %d to %d", f.path, v, lo, hi)
		return 0
	}
	return int(v)
}

func (d *decoder) bool(f field) bool {
	if f.val.Kind != yaml.ScalarNode || f.val.ShortTag() != "!!bool" {
		d.errf(f.val, "%s: want true or false, got %s", f.path, kindName(f.val))
		return false
	}
	var b bool
	if err := f.val.Decode(&b); err != nil {
		d.errf(f.val, "%s: want true or false, got %s", f.path, excerpt(f.val.Value))
	}
	return b
}

// strings reads a list of non-empty scalars.
func (d *decoder) strings(f field) []string {
	if isNull(f.val) {
		return nil
	}
	if f.val.Kind != yaml.SequenceNode {
		d.errf(f.val, "%s: want a list, like [a, b], got %s", f.path, kindName(f.val))
		return nil
	}
	out := make([]string, 0, len(f.val.Content))
	for _, it := range f.val.Content {
		it = resolve(it)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			d.errf(it, "%s: each item must be a string, got %s", f.path, kindName(it))
			continue
		}
		if strings.ContainsRune(it.Value, 0) {
			d.errf(it, "%s: item %d holds a NUL byte (\\0), which no program argument can carry; remove it", f.path, len(out)+1)
			continue
		}
		out = append(out, it.Value)
	}
	return out
}

// duration reads a duration within r: not negative, more than zero when
// r.positive, at most r.max. The key's kind (f.want) says which spellings
// it accepts: KindDuration Go duration strings only ("90s", "1m30s"),
// KindSeconds whole seconds only (keys named *_seconds),
// KindDurationOrSeconds both (keys named *_sec and the agent.* timeouts,
// documented in seconds).
func (d *decoder) duration(f field, r durRange) time.Duration {
	form := f.want.Kind
	v := f.val
	if v.Kind != yaml.ScalarNode || isNull(v) {
		d.errf(v, "%s: want a duration, got %s", f.path, kindName(v))
		return 0
	}
	var out time.Duration
	switch {
	case v.ShortTag() == "!!int" && form != KindDuration:
		var n int64
		if err := v.Decode(&n); err != nil || n > int64(1<<62/time.Second) || n < -int64(1<<62/time.Second) {
			d.errf(v, "%s: %s is not a number of seconds in range", f.path, v.Value)
			return 0
		}
		out = time.Duration(n) * time.Second
	case form == KindSeconds:
		d.errf(v, "%s: want a whole number of seconds, like 900, got %s", f.path, kindName(v))
		return 0
	case v.ShortTag() == "!!int":
		d.errf(v, "%s: %s has no unit; write a duration like \"%ss\"", f.path, v.Value, v.Value)
		return 0
	default:
		p, err := time.ParseDuration(v.Value)
		if err != nil {
			d.errf(v, "%s: %s is not a duration; write one like \"90s\" or \"1m30s\"", f.path, excerpt(v.Value))
			return 0
		}
		out = p
	}
	if out < 0 {
		d.errf(v, "%s: must not be negative", f.path)
		return 0
	}
	if r.positive && out == 0 {
		d.errf(v, "%s: must be more than zero", f.path)
		return 0
	}
	if out > r.max {
		d.errf(v, "%s: %s is out of range; allowed: %s", f.path, v.Value, r)
		return 0
	}
	return out
}

// path expands "~" and makes a relative path absolute against the file's
// directory.
func (d *decoder) path(f field) string {
	p := d.nonEmpty(f)
	if p == "" {
		return ""
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			d.errf(f.val, "%s: cannot expand ~: %v; set HOME or write an absolute path", f.path, err)
			return ""
		}
		p = filepath.Join(home, p[1:])
	case strings.HasPrefix(p, "~"):
		d.errf(f.val, "%s: ~user is not supported; write ~/... or an absolute path", f.path)
		return ""
	case !filepath.IsAbs(p):
		p = filepath.Join(d.dir, p)
	}
	return filepath.Clean(p)
}

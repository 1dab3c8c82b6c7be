package importer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A PM2 ecosystem file is JSON, or a JavaScript module whose only
// statement is `module.exports = {…}`. hermesctl import does not run the
// module (it is code: it could read the environment, require other files,
// start anything): it parses the literal with the small strict parser
// below, which takes JSON and JavaScript's literal syntax (unquoted and
// single-quoted keys, single-quoted and backquoted strings without ${},
// comments, trailing commas) and refuses everything else (a call, a
// variable, process.env, a spread), saying how to turn such a file into
// JSON with node.

// errNotLiteral reports a module that is more than one object literal.
var errNotLiteral = errors.New("not a plain object literal")

// jsObject is an object with its keys in the order of the file.
type jsObject struct {
	keys []string
	vals map[string]any // string, float64, bool, nil, *jsObject, []any
}

// parseModule reads a JSON document or a `module.exports = VALUE` (or
// `export default VALUE`) module.
func parseModule(src string) (any, error) {
	p := &jsParser{src: src}
	p.space()
	switch {
	case p.word("module"):
		p.space()
		if !p.lit(".") {
			return nil, p.fail("want module.exports =")
		}
		p.space()
		if !p.word("exports") {
			return nil, p.fail("want module.exports =")
		}
		p.space()
		if !p.lit("=") {
			return nil, p.fail("want module.exports =")
		}
	case p.word("export"):
		p.space()
		if !p.word("default") {
			return nil, p.fail("want export default")
		}
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	p.lit(";")
	p.space()
	if p.pos < len(p.src) {
		return nil, p.fail("more after the object")
	}
	return v, nil
}

type jsParser struct {
	src string
	pos int
}

// fail is an error at the current position, with its line.
func (p *jsParser) fail(msg string) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	near := p.src[p.pos:]
	if i := strings.IndexByte(near, '\n'); i >= 0 {
		near = near[:i]
	}
	if len(near) > 30 {
		near = near[:30]
	}
	return fmt.Errorf("%w: line %d: %s, at %q", errNotLiteral, line, msg, near)
}

// space skips white space and comments.
func (p *jsParser) space() {
	for p.pos < len(p.src) {
		switch {
		case strings.HasPrefix(p.src[p.pos:], "//"):
			if i := strings.IndexByte(p.src[p.pos:], '\n'); i >= 0 {
				p.pos += i + 1
			} else {
				p.pos = len(p.src)
			}
		case strings.HasPrefix(p.src[p.pos:], "/*"):
			if i := strings.Index(p.src[p.pos+2:], "*/"); i >= 0 {
				p.pos += i + 4
			} else {
				p.pos = len(p.src)
			}
		default:
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			if !unicode.IsSpace(r) && r != '\ufeff' {
				return
			}
			p.pos += n
		}
	}
}

func (p *jsParser) lit(s string) bool {
	if strings.HasPrefix(p.src[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

// word consumes identifier w when it is whole.
func (p *jsParser) word(w string) bool {
	if id := p.peekIdent(); id == w {
		p.pos += len(w)
		return true
	}
	return false
}

func (p *jsParser) peekIdent() string {
	end := p.pos
	for end < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[end:])
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || (end > p.pos && unicode.IsDigit(r))) {
			break
		}
		end += n
	}
	return p.src[p.pos:end]
}

// maxDepth bounds nesting, so that a hostile file cannot exhaust the stack.
const maxDepth = 64

func (p *jsParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("nested too deep")
	}
	p.space()
	if p.pos >= len(p.src) {
		return nil, p.fail("want a value")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'' || c == '`':
		return p.str()
	case c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	}
	switch id := p.peekIdent(); id {
	case "true", "false":
		p.pos += len(id)
		return id == "true", nil
	case "null", "undefined":
		p.pos += len(id)
		return nil, nil
	case "":
		return nil, p.fail("want a value")
	default:
		return nil, p.fail(fmt.Sprintf("%s is code, not a value", id))
	}
}

func (p *jsParser) object(depth int) (any, error) {
	o := &jsObject{vals: map[string]any{}}
	err := p.items("}", func() error {
		key, err := p.key()
		if err != nil {
			return err
		}
		p.space()
		if !p.lit(":") {
			return p.fail("want : after key " + strconv.Quote(key))
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		if _, dup := o.vals[key]; !dup {
			o.keys = append(o.keys, key)
		}
		o.vals[key] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (p *jsParser) key() (string, error) {
	if p.pos < len(p.src) && strings.IndexByte("\"'`", p.src[p.pos]) >= 0 {
		s, err := p.str()
		if err != nil {
			return "", err
		}
		return s.(string), nil
	}
	if p.lit("...") {
		return "", p.fail("a spread is code, not a value")
	}
	if id := p.peekIdent(); id != "" {
		p.pos += len(id)
		return id, nil
	}
	if p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		n, err := p.number()
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(n.(float64), 'f', -1, 64), nil
	}
	return "", p.fail("want a key")
}

func (p *jsParser) array(depth int) (any, error) {
	out := []any{}
	err := p.items("]", func() error {
		v, err := p.value(depth + 1)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// items reads a list from its opening bracket to end, the closing one:
// item reads each element (of an object, its key and value). The list may
// be empty and may end with a comma, as in JavaScript.
func (p *jsParser) items(end string, item func() error) error {
	p.pos++ // the opening bracket
	for {
		p.space()
		if p.lit(end) {
			return nil
		}
		if err := item(); err != nil {
			return err
		}
		p.space()
		if p.lit(end) {
			return nil
		}
		if !p.lit(",") {
			return p.fail("want , or " + end)
		}
	}
}

func (p *jsParser) str() (any, error) {
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			return b.String(), nil
		case c == '\n' && q != '`':
			return nil, p.fail("a string runs past its line")
		case q == '`' && strings.HasPrefix(p.src[p.pos:], "${"):
			return nil, p.fail("a template with ${} is code, not a value")
		case c == '\\':
			r, n, err := jsEscape(p.src[p.pos:])
			if err != nil {
				return nil, p.fail(err.Error())
			}
			b.WriteString(r)
			p.pos += n
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return nil, p.fail("a string does not end")
}

// jsEscape decodes the escape at the start of s (s[0] is '\').
func jsEscape(s string) (string, int, error) {
	if len(s) < 2 {
		return "", 0, errors.New("a lone backslash")
	}
	simple := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'b': "\b", 'f': "\f", 'v': "\v", '0': "\x00", '\\': "\\", '"': "\"", '\'': "'", '`': "`", '/': "/", '\n': ""}
	if r, ok := simple[s[1]]; ok {
		return r, 2, nil
	}
	switch s[1] {
	case 'x':
		if len(s) >= 4 {
			if u, err := strconv.ParseUint(s[2:4], 16, 8); err == nil {
				return string(rune(u)), 4, nil
			}
		}
	case 'u':
		if len(s) >= 6 {
			if u, err := strconv.ParseUint(s[2:6], 16, 16); err == nil {
				return string(rune(u)), 6, nil
			}
		}
	}
	return "", 0, fmt.Errorf("escape %q", s[:2])
}

func (p *jsParser) number() (any, error) {
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte("+-.0123456789eExXabcdefABCDEF_", p.src[p.pos]) >= 0 {
		p.pos++
	}
	text := strings.ReplaceAll(p.src[start:p.pos], "_", "")
	if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") {
		u, err := strconv.ParseUint(text[2:], 16, 53)
		if err != nil {
			p.pos = start
			return nil, p.fail("not a number")
		}
		return float64(u), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		p.pos = start
		return nil, p.fail("not a number")
	}
	return f, nil
}

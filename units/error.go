package units

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hermes-units/hermes/internal/word"
)

// Sentinel errors, matched with errors.Is through an *Error's Err.
var (
	// ErrInvalid marks a unit or config file whose content is wrong: syntax,
	// unknown keys, bad values, missing required fields.
	ErrInvalid = errors.New("invalid")
	// ErrInsecure marks a unit file or directory that other users could
	// write, or that another user owns. A unit is code execution.
	ErrInsecure = errors.New("insecure")
	// ErrFile marks a file that cannot be read as a unit: missing, a
	// directory, a dangling symlink, too large.
	ErrFile = errors.New("unreadable")
	// ErrDependency marks a cross-unit problem: a missing dependency, a
	// dependency cycle, a port declared by two units, a duplicate name.
	ErrDependency = errors.New("dependency")
)

// Error is one problem in one file, at a position. Line and Column are
// 1-based; Line 0 means the file as a whole (permissions, size, a missing
// file), and then Error() prints "file: message".
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
	Err    error // one of the sentinels above; never nil from this package
}

// Error formats as "file:line:col: message", the form editors and
// compilers use, so that the position is clickable.
func (e *Error) Error() string {
	if e.Line <= 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one file or one directory, sorted by
// file, line and column. errors.As(err, **Error) finds the first.
type Errors []*Error

// Error prints one error per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is and errors.As see every error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Sort orders errors by file, line and column, keeping the order of
// errors found at the same position.
func (es Errors) Sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// err returns es as an error, or nil when empty (never a typed nil).
func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	es.Sort()
	return es
}

// maxMsg bounds an error message, in bytes, whatever it quotes: the
// backstop behind excerpt, for text that comes from a library (a cron or
// regexp parser's message quoting its input).
const maxMsg = 1024

// excerpt quotes a value read from a file for an error message (see
// word.Quote).
var excerpt = word.Quote

// cut bounds text to about n bytes, on a rune boundary, saying how much
// was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("… (%d bytes cut)", len(s)-n)
}

// maxParserMsg bounds a parser's message quoted in an error.
const maxParserMsg = 200

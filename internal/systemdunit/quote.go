package systemdunit

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The quoting rules below follow systemd.syntax(7) and systemd.service(5):
// ExecStart= and Environment= split their value into words, honouring
// single and double quotes and C-style backslash escapes (inside quotes as
// well as outside); "%" starts a specifier in every setting used here and
// is written "%%"; in ExecStart= "$" starts a variable and is written "$$".

// execWord quotes one argv word for ExecStart=.
func execWord(w string) string {
	w = strings.ReplaceAll(w, "$", "$$")
	return quoteWord(w)
}

// quoteWord returns w as one systemd word with "%" escaped: bare when it
// holds nothing that splits or escapes, else in quotes with backslash
// escapes. Single quotes are preferred (they read as in a shell), double
// quotes when w holds a single quote and no double quote.
func quoteWord(w string) string {
	w = strings.ReplaceAll(w, "%", "%%")
	if w != "" && !strings.ContainsFunc(w, needsQuote) {
		return w
	}
	q := byte('\'')
	if strings.IndexByte(w, '\'') >= 0 && strings.IndexByte(w, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(w); {
		r, size := utf8.DecodeRuneInString(w[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, w[i])
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r > 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte(q)
	return b.String()
}

// needsQuote reports the runes that make a word need quotes: separators,
// quotes, escapes, the command separator ";", and anything unprintable.
func needsQuote(r rune) bool {
	switch r {
	case ' ', '"', '\'', '\\', ';':
		return true
	}
	return !unicode.IsPrint(r) || r == utf8.RuneError
}

// plain is a value written as is to the end of its line (a path, a
// description): "%" is escaped. It fails with ErrValue on what a unit
// file line cannot carry: a newline or carriage return, and a trailing
// backslash (which would join the next line).
func plain(setting, v string) (string, error) {
	if strings.ContainsAny(v, "\n\r") {
		return "", fmt.Errorf("%w: %s %q holds a line break", ErrValue, setting, v)
	}
	if strings.HasSuffix(v, `\`) {
		return "", fmt.Errorf("%w: %s %q ends with a backslash", ErrValue, setting, v)
	}
	return strings.ReplaceAll(v, "%", "%%"), nil
}

// oneLine folds a free text (a description) onto one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, `\`)
	return strings.ReplaceAll(s, "%", "%%")
}

// span formats a duration as a systemd time span: whole seconds as "90s",
// else milliseconds or microseconds, so that nothing is rounded away.
func span(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dus", d/time.Microsecond)
}

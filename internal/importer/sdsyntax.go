package importer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The syntax of systemd unit file values (systemd.syntax(7),
// systemd.unit(5) "Specifiers", systemd.time(7)): words with quotes and
// C escapes, "%" specifiers, "$" variables in command lines, time spans.

// specifiers expands the "%" specifiers a user unit may use, as the user
// manager of the user running the import would: %n the unit's full name,
// %N and %p its name, %h home, %u user name, %U uid, %t the runtime
// directory, %S, %C, %E, %L the state, cache, config and log directories,
// %% a percent sign. Another specifier is left as written and returned in
// unknown (a template's %i has no meaning outside a template).
func specifiers(v, name string) (out string, unknown []string) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	home, _ := os.UserHomeDir()
	xdg := func(env, def string) string {
		if p := os.Getenv(env); filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(home, def)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' || i+1 == len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch c := v[i]; c {
		case '%':
			b.WriteByte('%')
		case 'n':
			b.WriteString(name + ".service")
		case 'N', 'p':
			b.WriteString(name)
		case 'h':
			b.WriteString(home)
		case 'u':
			if u, err := user.Current(); err == nil {
				b.WriteString(u.Username)
			} else {
				b.WriteString("%u")
				unknown = append(unknown, "%u")
			}
		case 'U':
			b.WriteString(strconv.Itoa(os.Getuid()))
		case 't':
			b.WriteString(xdg("XDG_RUNTIME_DIR", filepath.Join("/run/user", strconv.Itoa(os.Getuid()))))
		case 'S':
			b.WriteString(xdg("XDG_STATE_HOME", ".local/state"))
		case 'C':
			b.WriteString(xdg("XDG_CACHE_HOME", ".cache"))
		case 'E':
			b.WriteString(xdg("XDG_CONFIG_HOME", ".config"))
		case 'L':
			b.WriteString(filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "log"))
		default:
			b.WriteByte('%')
			b.WriteByte(c)
			unknown = append(unknown, "%"+string(c))
		}
	}
	return b.String(), unknown
}

// errQuote reports a value whose quotes do not close.
var errQuote = errors.New("unbalanced quotes")

// SplitWords splits a value into words as systemd does (systemd.syntax(7),
// as in ExecStart= and Environment=): whitespace separates, single and
// double quotes group (also inside a word), and C escapes (\n, \t, \\,
// \", \', \s, \xHH, \NNN, \uXXXX) are decoded inside and outside quotes.
func SplitWords(v string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			r, n, err := unescape(v[i:])
			if err != nil {
				return nil, err
			}
			cur.WriteString(r)
			i += n - 1
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%w in %q", errQuote, v)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// unescape decodes the C escape at the start of s (s[0] is '\'): the
// text and how many bytes it took.
func unescape(s string) (string, int, error) {
	if len(s) < 2 {
		return "", 0, fmt.Errorf("a value ends with a lone backslash: %q", s)
	}
	simple := map[byte]string{'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\\': "\\", '"': "\"", '\'': "'", 's': " "}
	if r, ok := simple[s[1]]; ok {
		return r, 2, nil
	}
	hex := func(n int) (string, int, error) {
		if len(s) < 2+n {
			return "", 0, fmt.Errorf("short escape %q", s)
		}
		u, err := strconv.ParseUint(s[2:2+n], 16, 32)
		if err != nil {
			return "", 0, fmt.Errorf("bad escape %q", s[:2+n])
		}
		if n == 2 {
			return string([]byte{byte(u)}), 2 + n, nil
		}
		return string(rune(u)), 2 + n, nil
	}
	switch c := s[1]; {
	case c == 'x':
		return hex(2)
	case c == 'u':
		return hex(4)
	case c == 'U':
		return hex(8)
	case c >= '0' && c <= '7':
		if len(s) < 4 {
			return "", 0, fmt.Errorf("short escape %q", s)
		}
		u, err := strconv.ParseUint(s[1:4], 8, 8)
		if err != nil {
			return "", 0, fmt.Errorf("bad escape %q", s[:4])
		}
		return string([]byte{byte(u)}), 4, nil
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return "", 0, fmt.Errorf("unknown escape %q", s[:1+n])
}

// varRef matches a variable reference of a command line: ${NAME}, or
// $NAME as a whole word.
const varChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

// hasVars reports whether a command word refers to a variable ("$$" is a
// literal dollar).
func hasVars(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] != '$' {
			continue
		}
		if i+1 < len(w) && w[i+1] == '$' {
			i++
			continue
		}
		if i+1 < len(w) && (w[i+1] == '{' || strings.IndexByte(varChars, w[i+1]) >= 0) {
			return true
		}
	}
	return false
}

// literal is a command word without variables: "$$" is "$".
func literal(w string) string { return strings.ReplaceAll(w, "$$", "$") }

// shellWord writes a systemd command word for /bin/sh: a word that is
// one $NAME stays bare (both split it into words); otherwise the word is
// double-quoted, its ${NAME} and $NAME references expanded there, the
// rest literal.
func shellWord(w string) string {
	if len(w) > 1 && w[0] == '$' && strings.Trim(w[1:], varChars) == "" {
		return w
	}
	if !hasVars(w) {
		return shellQuote(literal(w))
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c == '$' && i+1 < len(w) && w[i+1] == '$':
			b.WriteString(`\$`)
			i++
		case c == '$' && i+1 < len(w) && w[i+1] == '{':
			end := strings.IndexByte(w[i:], '}')
			if end < 0 {
				b.WriteString(`\$`)
				continue
			}
			b.WriteString(w[i : i+end+1])
			i += end
		case c == '$':
			j := i + 1
			for j < len(w) && strings.IndexByte(varChars, w[j]) >= 0 {
				j++
			}
			if j == i+1 {
				b.WriteString(`\$`)
				continue
			}
			b.WriteString("${" + w[i+1:j] + "}")
			i = j - 1
		case c == '"' || c == '\\' || c == '`':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// shellQuote quotes w for /bin/sh when it needs it.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, varChars+"-./:=@%+,") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// errSpan reports a time span that does not parse.
var errSpan = errors.New("not a time span")

// spanUnits are systemd.time(7)'s units.
var spanUnits = map[string]time.Duration{
	"us": time.Microsecond, "usec": time.Microsecond, "µs": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
	"M": 2629800 * time.Second, "month": 2629800 * time.Second, "months": 2629800 * time.Second,
	"y": 31557600 * time.Second, "year": 31557600 * time.Second, "years": 31557600 * time.Second,
}

// parseSpan reads a systemd time span ("90", "1min 30s", "500ms"): a bare
// number is seconds. infinite is true for "infinity".
func parseSpan(v string) (d time.Duration, infinite bool, err error) {
	v = strings.TrimSpace(v)
	if v == "infinity" {
		return 0, true, nil
	}
	if v == "" {
		return 0, false, fmt.Errorf("%w: empty", errSpan)
	}
	rest := v
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		n := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if n == 0 {
			return 0, false, fmt.Errorf("%w: %q", errSpan, v)
		}
		num := rest
		if n > 0 {
			num = rest[:n]
		}
		f, perr := strconv.ParseFloat(num, 64)
		if perr != nil {
			return 0, false, fmt.Errorf("%w: %q", errSpan, v)
		}
		rest = strings.TrimLeft(rest[len(num):], " ")
		u := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || (r >= '0' && r <= '9') })
		word := rest
		if u >= 0 {
			word = rest[:u]
		}
		unit := time.Second
		if word != "" {
			var ok bool
			if unit, ok = spanUnits[word]; !ok {
				return 0, false, fmt.Errorf("%w: %q: unknown unit %q", errSpan, v, word)
			}
		}
		rest = rest[len(word):]
		add := f * float64(unit)
		if add > math.MaxInt64/2 {
			return 0, false, fmt.Errorf("%w: %q: too long", errSpan, v)
		}
		d += time.Duration(add)
	}
	return d, false, nil
}

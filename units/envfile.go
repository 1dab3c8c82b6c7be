package units

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
)

// ErrEnvFile is matched by the errors of ReadEnvFiles: a mandatory file
// that is missing or unreadable, or a line that is no KEY=value.
var ErrEnvFile = errors.New("env_file")

// EnvFileError is a fault of one env file: the file, the line (0 for the
// file as a whole) and what is wrong.
type EnvFileError struct {
	File string
	Line int
	Msg  string
	Err  error // the file system's error, when the file could not be read
}

func (e *EnvFileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("env_file %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("env_file %s: %s", e.File, e.Msg)
}

// Is matches ErrEnvFile.
func (e *EnvFileError) Is(target error) bool { return target == ErrEnvFile }

// Unwrap is the file system's error, if any.
func (e *EnvFileError) Unwrap() error { return e.Err }

// ReadEnvFiles reads files in order (see ParseEnv) and returns their
// variables as KEY=value, a later file's replacing an earlier one's. A
// missing optional file is skipped; a missing mandatory one, one that
// cannot be read, or a bad line is an *EnvFileError naming it.
func ReadEnvFiles(files []EnvFile) ([]string, error) {
	var out []string
	at := map[string]int{}
	for _, f := range files {
		data, err := readEnvFile(f.Path)
		if errors.Is(err, fs.ErrNotExist) && f.Optional {
			continue
		}
		if err != nil {
			msg := err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				msg = "no such file; create it, or write the path as \"-" + f.Path + "\" if it is optional"
			}
			return nil, &EnvFileError{File: f.Path, Msg: msg, Err: err}
		}
		kvs, err := ParseEnv(string(data))
		if err != nil {
			if pe, ok := errors.AsType[*EnvFileError](err); ok {
				pe.File = f.Path
			}
			return nil, err
		}
		for _, kv := range kvs {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := at[k]; ok {
				out[i] = kv
				continue
			}
			at[k] = len(out)
			out = append(out, kv)
		}
	}
	return out, nil
}

// readEnvFile reads a file of at most MaxFileSize bytes.
func readEnvFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err == nil && len(data) > MaxFileSize {
		err = fmt.Errorf("over the %d-byte limit; is it the right file?", MaxFileSize)
	}
	return data, err
}

var envKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`) })

// ParseEnv reads KEY=value lines as systemd's EnvironmentFile= and
// docker's env_file read them: blank lines and lines starting with # or ;
// are skipped; a line may start with "export "; whitespace around the key
// and the value is dropped; a value in double quotes may span lines and
// takes the escapes \" \\ \$ \` \n and \t, one in single quotes is taken
// as written; after a closing quote only a comment may follow; an unquoted
// value is taken as written, up to the end of the line. Within a file, a
// later line replaces an earlier one's variable. A line that is no
// KEY=value is an *EnvFileError with its line (File left empty).
func ParseEnv(text string) ([]string, error) {
	var out []string
	at := map[string]int{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		no := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimSpace(rest)
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKeyRE().MatchString(k) {
			return nil, &EnvFileError{Line: no, Msg: fmt.Sprintf("%s is not KEY=value (a key is letters, digits and _, not starting with a digit)", excerpt(line))}
		}
		v = strings.TrimSpace(v)
		if v != "" && (v[0] == '"' || v[0] == '\'') {
			val, used, err := quoted(v, lines[i+1:])
			if err != "" {
				return nil, &EnvFileError{Line: no, Msg: k + ": " + err}
			}
			v, i = val, i+used
		}
		if strings.ContainsRune(v, 0) {
			return nil, &EnvFileError{Line: no, Msg: k + ": a value cannot hold a NUL byte"}
		}
		if j, ok := at[k]; ok {
			out[j] = k + "=" + v
			continue
		}
		at[k] = len(out)
		out = append(out, k+"="+v)
	}
	return out, nil
}

// quoted reads the quoted value that starts v, going on into next (the
// lines after v's) while the quote is open; it returns the value and how
// many of next it took, or what is wrong.
func quoted(v string, next []string) (val string, used int, err string) {
	q := v[0]
	var b strings.Builder
	s := v[1:]
	for {
		for j := 0; j < len(s); j++ {
			c := s[j]
			switch {
			case c == q:
				rest := strings.TrimSpace(s[j+1:])
				if rest != "" && rest[0] != '#' {
					return "", 0, fmt.Sprintf("%s follows the closing quote; only a # comment may", excerpt(rest))
				}
				return b.String(), used, ""
			case c == '\\' && q == '"' && j+1 < len(s):
				j++
				switch s[j] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case '"', '\\', '$', '`':
					b.WriteByte(s[j])
				default:
					b.WriteByte('\\')
					b.WriteByte(s[j])
				}
			default:
				b.WriteByte(c)
			}
		}
		if used == len(next) {
			return "", 0, fmt.Sprintf("the %c quote is never closed", q)
		}
		b.WriteByte('\n')
		s = next[used]
		used++
	}
}

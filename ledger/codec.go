package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hermes-units/hermes/proc"
)

// The file is written in a canonical layout: one entry per line.
//
//	{"version":1,"entries":[
//	{...},
//	{...}
//	]}
//
// It is plain JSON (Parse reads any layout), but the layout lets a process
// that read the file before decode only the lines it has not seen: under
// contention every writer re-reads the whole file at every write, and
// decoding it from scratch dominated the time the lock is held.
var (
	fileHead = []byte(`{"version":` + strconv.Itoa(Version) + `,"entries":[` + "\n")
	fileTail = []byte("]}\n")
)

// Marshal encodes entries in the file format (canonical layout). It fails
// only on a spawn time RFC 3339 cannot hold (a year outside 0–9999), as
// encoding/json would.
func Marshal(entries []Entry) ([]byte, error) {
	return marshalReusing(entries, nil, nil, false)
}

// marshalReusing is Marshal, copying the line of an entry that is equal to
// the next unmatched entry of prev (whose lines are prevLines) instead of
// encoding it again. An Update usually keeps the entries it read, in order,
// and adds or drops a few. With redact, the entries it encodes afresh get
// their Argv redacted, so that no Update can store a secret.
func marshalReusing(entries, prev []Entry, prevLines []string, redact bool) ([]byte, error) {
	size := len(fileHead) + len(fileTail) + len(entries)*384
	if len(prevLines) > 0 && len(prev) == len(prevLines) {
		size = len(fileHead) + len(fileTail) + 64
		for _, l := range prevLines {
			size += len(l) + 2
		}
		size += max(len(entries)-len(prev), 0) * 384
	} else {
		prev = nil
	}
	b := make([]byte, 0, size)
	b = append(b, fileHead...)
	j := 0 // next unmatched entry of prev
	for i, e := range entries {
		reused := false
		// Look a little ahead in prev: dropped entries are skipped over.
		for k := j; k < len(prev) && k < j+lookahead; k++ {
			if equalEntry(prev[k], e) {
				b = append(b, prevLines[k]...)
				j = k + 1
				reused = true
				break
			}
		}
		if !reused {
			if redact {
				e.Argv = Redact(e.Argv)
			}
			var err error
			if b, err = appendEntry(b, e); err != nil {
				return nil, err
			}
		}
		if i < len(entries)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, fileTail...), nil
}

// lookahead bounds the search for a reusable line, so that an Update that
// reorders entries costs a re-encoding, not a quadratic search.
const lookahead = 64

// equalEntry reports whether a and b encode the same. False negatives only
// cost an encoding: times are compared as values (same instant, same
// location pointer), not with Time.Equal.
func equalEntry(a, b Entry) bool {
	return a.Unit == b.Unit && a.Leader == b.Leader && a.PGID == b.PGID && a.Cgroup == b.Cgroup &&
		a.Owner == b.Owner && a.Role == b.Role && a.Ownership == b.Ownership && a.Reason == b.Reason &&
		a.Log == b.Log && a.Spawned == b.Spawned && a.State == b.State && a.Spawn == b.Spawn &&
		(a.Argv == nil) == (b.Argv == nil) && slices.Equal(a.Argv, b.Argv)
}

// appendEntry encodes e as one JSON object with the field names of Entry's
// tags; it decodes with encoding/json to the same Entry.
func appendEntry(b []byte, e Entry) ([]byte, error) {
	b = append(b, `{"unit":`...)
	b = appendString(b, e.Unit)
	b = append(b, `,"leader":`...)
	b = appendIdentity(b, e.Leader)
	b = append(b, `,"pgid":`...)
	b = strconv.AppendInt(b, int64(e.PGID), 10)
	if e.Cgroup != "" {
		b = append(b, `,"cgroup":`...)
		b = appendString(b, e.Cgroup)
	}
	b = append(b, `,"argv":`...)
	if e.Argv == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range e.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"owner":`...)
	b = appendIdentity(b, e.Owner)
	b = append(b, `,"role":`...)
	b = appendString(b, e.Role)
	b = append(b, `,"ownership":`...)
	b = appendString(b, e.Ownership)
	for _, f := range [...]struct{ k, v string }{{"reason", e.Reason}, {"log", e.Log}} {
		if f.v != "" {
			b = append(b, `,"`+f.k+`":`...)
			b = appendString(b, f.v)
		}
	}
	b = append(b, `,"spawned":"`...)
	b, err := e.Spawned.AppendText(b) // RFC 3339, as encoding/json writes it
	if err != nil {
		return nil, fmt.Errorf("ledger: entry %q: spawn time: %w", e.Unit, err)
	}
	b = append(b, '"')
	for _, f := range [...]struct{ k, v string }{{"state", e.State}, {"spawn", e.Spawn}} {
		if f.v != "" {
			b = append(b, `,"`+f.k+`":`...)
			b = appendString(b, f.v)
		}
	}
	return append(b, '}'), nil
}

func appendIdentity(b []byte, id proc.Identity) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(id.PID), 10)
	b = append(b, `,"start_time":`...)
	b = strconv.AppendUint(b, id.StartTime, 10)
	b = append(b, `,"boot_id":`...)
	b = appendString(b, id.BootID)
	return append(b, '}')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// lineCache maps the lines of the canonical layout to the entries they
// decode to. It holds the lines of the last file parsed.
type lineCache map[string]*cachedLine

type cachedLine struct {
	line string // the key, kept so that a hit needs no new string
	e    Entry
}

var errNotCanonical = errors.New("not in the canonical layout")

// parseCanonical decodes b when it is in the canonical layout, decoding only
// the lines missing from cache. It returns the entries, the line of each, and
// the cache for the next call. Any other input yields errNotCanonical (Parse
// then decides). When it succeeds, its entries are the ones Parse would give;
// their Argv is shared with the cache: copy before changing it (cloneEntry).
func parseCanonical(b []byte, cache lineCache) ([]Entry, []string, lineCache, error) {
	rest, ok := bytes.CutPrefix(b, fileHead)
	if !ok {
		return nil, nil, nil, errNotCanonical
	}
	rest, ok = bytes.CutSuffix(rest, fileTail)
	if !ok {
		return nil, nil, nil, errNotCanonical
	}
	n := bytes.Count(rest, []byte{'\n'})
	entries := make([]Entry, 0, n)
	lines := make([]string, 0, n)
	next := make(lineCache, n)
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, nil, nil, errNotCanonical
		}
		line := rest[:i]
		rest = rest[i+1:]
		if len(rest) > 0 {
			var comma bool
			if line, comma = bytes.CutSuffix(line, []byte{','}); !comma {
				return nil, nil, nil, errNotCanonical
			}
		}
		c, ok := cache[string(line)]
		if !ok {
			// A fresh Entry: Unmarshal into a used one would merge.
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, nil, nil, errNotCanonical
			}
			c = &cachedLine{line: string(line), e: e}
		}
		next[c.line] = c
		entries = append(entries, c.e)
		lines = append(lines, c.line)
	}
	return entries, lines, next, nil
}

// cloneEntry copies the one field of Entry that shares memory, so that a
// caller cannot change a cached entry.
func cloneEntry(e Entry) Entry {
	if e.Argv != nil {
		e.Argv = append([]string{}, e.Argv...)
	}
	return e
}

package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hermes-units/hermes/proc"
	"github.com/hermes-units/hermes/units"
)

// The file is written in a canonical layout: one entry per line.
//
//	{"version":2,"boot_id":"…","entries":[
//	{...},
//	{...}
//	]}
//
// It is plain JSON (Parse reads any layout), but the layout lets a process
// that read the file before decode only the lines it has not seen: under
// contention every writer re-reads the whole file at every write, and
// decoding it from scratch dominated the time the lock is held.
var (
	headStart = []byte(`{"version":`)
	headBoot  = []byte(`,"boot_id":`)
	headEnd   = []byte(`,"entries":[` + "\n")
	fileTail  = []byte("]}\n")
)

// appendHead appends the canonical head of a file whose boot id is boot.
func appendHead(b []byte, boot string) []byte {
	b = append(b, headStart...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, headBoot...)
	b = appendString(b, boot)
	return append(b, headEnd...)
}

// cutHead parses the canonical head of b: version 2 with the file's boot
// id, or version 1 (no boot id). It returns the boot id and the rest.
func cutHead(b []byte) (boot string, rest []byte, ok bool) {
	if rest, ok = bytes.CutPrefix(b, []byte(`{"version":1,"entries":[`+"\n")); ok {
		return "", rest, true
	}
	if rest, ok = bytes.CutPrefix(b, []byte(`{"version":2,"boot_id":"`)); !ok {
		return "", nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0 || !utf8.Valid(rest[:i]) || !printable(rest[:i]) {
		return "", nil, false // not as appendString writes it: let Parse decide
	}
	boot = string(rest[:i])
	if rest, ok = bytes.CutPrefix(rest[i+1:], headEnd); !ok {
		return "", nil, false
	}
	return boot, rest, true
}

// printable reports whether b has no control characters (which
// appendString escapes).
func printable(b []byte) bool { return !bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 }) }

// fileBoot is the boot id written in the head of new files: this boot's.
func fileBoot() string {
	boot, _ := proc.BootID()
	return boot
}

// marshalReusing encodes entries in the file format (canonical layout),
// appending to dst, with boot as the file's boot id, and fails only on a
// spawn time RFC 3339 cannot hold (a year outside 0–9999), as encoding/json
// would, and on a role, ownership or state that Parse would refuse. It
// copies the line of an entry that is equal to the next unmatched
// entry of prev instead of encoding it again (when prev's lines were
// written with the same boot id). An Update usually keeps the entries it
// read, in order, and adds or drops a few. With redact, the entries it
// encodes afresh get their Argv redacted, so that no Update can store a
// secret.
func marshalReusing(dst []byte, boot string, entries []Entry, prev snapshot, redact bool) ([]byte, error) {
	if len(prev.entries) != len(prev.lines) || prev.boot != boot {
		prev = snapshot{}
	}
	size := 64 + len(fileTail) + len(entries)*384
	if len(prev.lines) > 0 {
		size = 128 + len(fileTail)
		for _, l := range prev.lines {
			size += len(l) + 2
		}
		size += max(len(entries)-len(prev.lines), 0) * 384
	}
	b := slices.Grow(dst[:0], size)
	b = appendHead(b, boot)
	j := 0 // next unmatched entry of prev
	for i := range entries {
		e := &entries[i]
		reused := false
		// Look a little ahead in prev: dropped entries are skipped over.
		for k := j; k < len(prev.entries) && k < j+lookahead; k++ {
			if equalEntry(prev.entries[k], e) {
				b = append(b, prev.lines[k]...)
				j = k + 1
				reused = true
				break
			}
		}
		if !reused {
			enc := *e
			if redact {
				enc.Argv = Redact(enc.Argv)
			}
			var err error
			if b, err = appendEntry(b, boot, enc); err != nil {
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
func equalEntry(a, b *Entry) bool {
	return a.Unit == b.Unit && a.Leader == b.Leader && a.PGID == b.PGID && a.Cgroup == b.Cgroup &&
		a.Owner == b.Owner && a.Role == b.Role && a.Ownership == b.Ownership && a.Reason == b.Reason &&
		a.Log == b.Log && a.Spawned == b.Spawned && a.State == b.State && a.Spawn == b.Spawn &&
		(a.Argv == nil) == (b.Argv == nil) && slices.Equal(a.Argv, b.Argv)
}

// appendEntry encodes e as one JSON object with the field names of Entry's
// tags; it decodes (decodeEntry, with the file's boot id boot) to the same
// Entry.
func appendEntry(b []byte, boot string, e Entry) ([]byte, error) {
	if err := checkWords(&e); err != nil {
		return nil, fmt.Errorf("ledger: entry %q: %w", e.Unit, err)
	}
	b = append(b, `{"unit":`...)
	b = appendString(b, e.Unit)
	b = append(b, `,"leader":`...)
	b = appendIdentity(b, boot, e.Leader)
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
	b = appendIdentity(b, boot, e.Owner)
	b = append(b, `,"role":`...)
	b = appendString(b, string(e.Role))
	b = append(b, `,"ownership":`...)
	b = appendString(b, string(e.Ownership))
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
	for _, f := range [...]struct{ k, v string }{{"state", string(e.State)}, {"spawn", e.Spawn}} {
		if f.v != "" {
			b = append(b, `,"`+f.k+`":`...)
			b = appendString(b, f.v)
		}
	}
	return append(b, '}'), nil
}

// checkWords refuses a role, ownership or state that decodeEntry would
// refuse: the file never holds what cannot be read back.
func checkWords(e *Entry) error {
	var o units.Ownership
	if err := o.UnmarshalText([]byte(e.Ownership)); err != nil {
		return err
	}
	if _, err := units.ParseOwnerRole(string(e.Role)); err != nil {
		return err
	}
	_, err := ParseState(string(e.State))
	return err
}

// appendIdentity encodes id, without its boot id when that is the file's.
func appendIdentity(b []byte, boot string, id proc.Identity) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(id.PID), 10)
	b = append(b, `,"start_time":`...)
	b = strconv.AppendUint(b, id.StartTime, 10)
	if id.BootID != boot {
		b = append(b, `,"boot_id":`...)
		b = appendString(b, id.BootID)
	}
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

// snapshot is a parsed file in the canonical layout: its entries and the
// line of each, in file order. A Ledger keeps the last one it parsed, so that
// the next parse decodes only the lines that are new.
type snapshot struct {
	boot    string   // the file's boot id: the lines mean their entries only with it
	entries []*Entry // never changed once decoded: clone before handing out
	lines   []string
}

var errNotCanonical = errors.New("not in the canonical layout")

// parseCanonical decodes b when it is in the canonical layout, decoding only
// the lines that prev does not hold. It returns the snapshot of b. Any other
// input yields errNotCanonical (Parse then decides). When it succeeds, its
// entries are the ones Parse would give; they are shared with prev and must
// not be changed (hand out copies: cloneEntries).
//
// Lines are matched in order, as writers change the file: a write keeps the
// lines it read in order, drops some (pruned, removed) and appends new ones
// at the end. So under contention a parse compares each line once with the
// line at the same place in prev (a memory compare, no hashing, no map) and
// decodes only what other writers appended since; a line dropped in between
// is skipped by looking a little ahead in prev.
func parseCanonical(b []byte, prev snapshot) (snapshot, error) {
	boot, rest, ok := cutHead(b)
	if !ok {
		return snapshot{}, errNotCanonical
	}
	if boot != prev.boot {
		prev = snapshot{}
	}
	rest, ok = bytes.CutSuffix(rest, fileTail)
	if !ok {
		return snapshot{}, errNotCanonical
	}
	n := bytes.Count(rest, []byte{'\n'})
	next := snapshot{boot: boot, entries: make([]*Entry, 0, n), lines: make([]string, 0, n)}
	j := 0 // next unmatched line of prev
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return snapshot{}, errNotCanonical
		}
		line := rest[:i]
		rest = rest[i+1:]
		if len(rest) > 0 {
			var comma bool
			if line, comma = bytes.CutSuffix(line, []byte{','}); !comma {
				return snapshot{}, errNotCanonical
			}
		}
		k := matchLine(line, prev.lines, j)
		if k >= 0 {
			next.entries = append(next.entries, prev.entries[k])
			next.lines = append(next.lines, prev.lines[k])
			j = k + 1
			continue
		}
		// A fresh Entry: Unmarshal into a used one would merge.
		e := new(Entry)
		if err := decodeEntry(line, boot, e); err != nil {
			return snapshot{}, errNotCanonical
		}
		next.entries = append(next.entries, e)
		next.lines = append(next.lines, string(line))
	}
	return next, nil
}

// matchLine returns the index of line in lines[from:from+lookahead], or -1.
func matchLine(line []byte, lines []string, from int) int {
	for k := from; k < len(lines) && k < from+lookahead; k++ {
		if len(lines[k]) == len(line) && lines[k] == string(line) {
			return k
		}
	}
	return -1
}

// cloneEntries copies the entries, Argv included (the one field of Entry
// that shares memory), so that a caller cannot change a cached entry. It
// leaves room to append extra more without a copy. The Argv copies share one
// allocation, each capped so that an append to one cannot reach the next.
func cloneEntries(es []*Entry, extra int) []Entry {
	out, _ := cloneInto(nil, nil, es, extra)
	return out
}

// cloneInto is cloneEntries into the memory of dst and argv, a previous
// copy that nothing uses any more, where it is large enough; it returns
// the copy and the memory of its Argv, for the next.
func cloneInto(dst []Entry, argv []string, es []*Entry, extra int) ([]Entry, []string) {
	n := 0
	for _, e := range es {
		n += len(e.Argv)
	}
	if cap(argv) < n {
		argv = make([]string, 0, n+n/8)
	}
	if cap(dst) < len(es)+extra {
		dst = make([]Entry, 0, len(es)+len(es)/8+extra)
	}
	clear(dst[len(es):cap(dst)]) // what an earlier copy left there is not kept alive
	clear(argv[n:cap(argv)])
	out, argv := dst[:len(es)], argv[:0]
	for i, e := range es {
		out[i] = *e
		if e.Argv != nil {
			start := len(argv)
			argv = append(argv, e.Argv...)
			out[i].Argv = argv[start:len(argv):len(argv)]
		}
	}
	return out, argv
}

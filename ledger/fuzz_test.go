package ledger

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, fails only with ErrCorrupt, and what it
// accepts survives Marshal → Parse unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[]}`))
	f.Add([]byte(`{"version":1,"entries":[{"unit":"a","leader":{"pid":5,"start_time":9,"boot_id":"b"},"pgid":5,"argv":["x"],"owner":{"pid":1,"start_time":2,"boot_id":"b"},"role":"run","ownership":"owned","spawned":"2025-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"version":2,"entries":[]}`))
	f.Add([]byte(`{"version":1}{}`))
	f.Add([]byte(``))
	f.Add([]byte("{\"version\":1,\"entries\":[\n{\"unit\":\"a\"},\n{\"unit\":\"b\",\"argv\":[\"x\"]}\n]}\n"))
	f.Add([]byte("{\"version\":1,\"entries\":[\n]}\n"))
	f.Add([]byte("{\"version\":1,\"entries\":[\nnull\n]}\n"))
	f.Add([]byte("{\"version\":2,\"boot_id\":\"b\",\"entries\":[\n{\"unit\":\"a\",\"leader\":{\"pid\":5,\"start_time\":9},\"owner\":{\"pid\":1,\"start_time\":2,\"boot_id\":\"c\"}},\n{\"unit\":\"b\",\"leader\":{\"pid\":5,\"start_time\":9,\"boot_id\":\"\"}}\n]}\n"))
	f.Add([]byte(`{"version":2,"boot_id":"b","entries":[{"unit":"a","leader":{"pid":5,"start_time":9}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCanonical(t, b)
		es, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Parse error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		out, err := Marshal(es)
		if err != nil {
			t.Fatalf("Marshal of parsed entries: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(b))): %v\n%s", err, out)
		}
		checkCanonical(t, out)
		if len(es) == 0 && len(back) == 0 {
			return
		}
		if !reflect.DeepEqual(normalize(es), normalize(back)) {
			t.Fatalf("round trip changed the entries:\n%+v\n%+v", es, back)
		}
	})
}

// checkCanonical: where the canonical-layout parser accepts b, cold or with
// a warm cache, it returns what Parse returns.
func checkCanonical(t *testing.T, b []byte) {
	t.Helper()
	snap, err := parseCanonical(b, snapshot{})
	cold, lines := snap.entries, snap.lines
	if err != nil {
		return
	}
	want, err := Parse(b)
	if err != nil {
		t.Fatalf("parseCanonical accepted what Parse rejects (%v):\n%q", err, b)
	}
	warmSnap, err := parseCanonical(b, snap)
	warm := warmSnap.entries
	if err != nil {
		t.Fatalf("parseCanonical with a warm cache: %v", err)
	}
	if len(lines) != len(cold) {
		t.Fatalf("parseCanonical: %d lines for %d entries", len(lines), len(cold))
	}
	// Reusing the lines re-encodes to the same bytes as encoding afresh.
	plain := make([]Entry, len(cold))
	for i, e := range cold {
		plain[i] = *e
	}
	if reused, err := marshalReusing(nil, snap.boot, plain, snap, false); err == nil {
		if fresh, err := Marshal(plain); err == nil {
			if back, err := Parse(reused); err != nil || !reflect.DeepEqual(normalize(back), normalize(mustParse(t, fresh))) {
				t.Fatalf("reused lines decode differently (%v):\n%s\n%s", err, reused, fresh)
			}
		}
	}
	if len(want) != 0 || len(cold) != 0 || len(warm) != 0 {
		if !reflect.DeepEqual(plain, want) || !reflect.DeepEqual(values(warm), want) {
			t.Fatalf("parseCanonical differs from Parse:\ncold %+v\nwarm %+v\nwant %+v", cold, warm, want)
		}
	}
}

func mustParse(t *testing.T, b []byte) []Entry {
	t.Helper()
	es, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse of Marshal output: %v\n%s", err, b)
	}
	return es
}

// normalize makes entries comparable after a JSON round trip: times lose
// their monotonic reading and location.
func normalize(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		e.Spawned = e.Spawned.UTC()
		out[i] = e
	}
	return out
}

// parsers are the two readers of a ledger file, which agree: Parse, and
// the canonical-layout parser a ledger reads its own writes with.
var parsers = []struct {
	name  string
	parse func([]byte) ([]Entry, error)
}{
	{"Parse", Parse},
	{"canonical", func(b []byte) ([]Entry, error) {
		s, err := parseCanonical(b, snapshot{})
		return values(s.entries), err
	}},
}

func values(es []*Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = *e
	}
	return out
}

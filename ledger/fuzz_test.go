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
	f.Fuzz(func(t *testing.T, b []byte) {
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
		if len(es) == 0 && len(back) == 0 {
			return
		}
		if !reflect.DeepEqual(normalize(es), normalize(back)) {
			t.Fatalf("round trip changed the entries:\n%+v\n%+v", es, back)
		}
	})
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

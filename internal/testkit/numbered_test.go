package testkit

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

// parseTest reads "S text" (S the stream) and "S+text" (a part of a line);
// a line with neither is not a record.
func parseTest(line string) (string, string, bool, bool) {
	if s, text, ok := strings.Cut(line, " "); ok {
		return s, text, false, true
	}
	s, text, ok := strings.Cut(line, "+")
	return s, text, true, ok
}

func TestCheckNumbered(t *testing.T) {
	tenth := "" // b's 2 to 9, then 10 in two parts with a line of a between
	for i := 2; i < 10; i++ {
		tenth += "b " + strconv.Itoa(i) + "\n"
	}
	tenth += "b+1\na+\nb 0\n"
	for _, tc := range []struct {
		name, log string
		want      map[string]int // nil: a failure
		fails     string
	}{
		{"two streams, a line in parts", "a 0\nb 0\na 1\nb+\nb 1\na 2\n" + tenth, map[string]int{"a": 3, "b": 11}, ""},
		{"empty", "", map[string]int{}, ""},
		{"lost line", "a 0\na 2\n", nil, `a: line "2" where "1" was due: a line lost or written twice`},
		{"twice", "a 0\na 0\n", nil, `a: line "0" where "1" was due: a line lost or written twice`},
		{"parts of another stream not joined", "a+1\nb 0\na 0\n", nil, `a: line "10" where "0" was due: a line lost or written twice`},
		{"not a record", "a 0\nraw\n", nil, `log line "raw\n" is not a record`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]int
			errs := fails(t, func(tb testing.TB) { got = CheckNumbered(tb, []byte(tc.log), parseTest) })
			if tc.want == nil {
				if len(errs) != 1 || errs[0] != tc.fails {
					t.Errorf("failures %q, want %q", errs, tc.fails)
				}
				return
			}
			if len(errs) > 0 || !maps.Equal(got, tc.want) {
				t.Errorf("got %v (failures %q), want %v", got, errs, tc.want)
			}
		})
	}
}

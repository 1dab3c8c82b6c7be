package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type got struct {
	kind    Kind
	typ, id string
	data    string
	comment string
}

func readAll(t *testing.T, r io.Reader) ([]got, string, error) {
	t.Helper()
	rd := NewReader(r)
	var out []got
	var raw bytes.Buffer
	for {
		p, err := rd.Next()
		if err != nil {
			return out, raw.String(), err
		}
		raw.Write(p.Raw)
		g := got{kind: p.Kind, comment: string(p.Comment)}
		if p.Kind == Event {
			g.typ, g.id, g.data = p.Type, p.ID, string(p.Data)
		}
		out = append(out, g)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []got
	}{
		{"chat chunk", "data: {\"a\":1}\n\n", []got{{kind: Event, data: `{"a":1}`}}},
		{"done", "data: [DONE]\n\n", []got{{kind: Event, data: "[DONE]"}}},
		{"keep-alive comment", ": ping\n\n", []got{{kind: Comment, comment: "ping"}, {kind: Empty}}},
		{"comment without blank line", ":keepalive\ndata: x\n\n", []got{{kind: Comment, comment: "keepalive"}, {kind: Event, data: "x"}}},
		{"comment inside an event", "data: a\n: mid\ndata: b\n\n", []got{{kind: Event, data: "a\nb"}}},
		{"named event", "event: response.output_text.delta\ndata: {}\n\n", []got{{kind: Event, typ: "response.output_text.delta", data: "{}"}}},
		{"event without data is not dispatched", "event: ping\n\n", []got{{kind: Empty}}},
		{"crlf", "data: x\r\n\r\n", []got{{kind: Event, data: "x"}}},
		{"lone cr", "data: x\r\rdata: y\r\r", []got{{kind: Event, data: "x"}, {kind: Event, data: "y"}}},
		{"no space after colon", "data:x\n\n", []got{{kind: Event, data: "x"}}},
		{"two spaces keep one", "data:  x\n\n", []got{{kind: Event, data: " x"}}},
		{"field without colon", "data\n\n", []got{{kind: Event, data: ""}}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []got{{kind: Event, id: "7", data: "a"}, {kind: Event, id: "7", data: "b"}}},
		{"incomplete last event dropped", "data: a\n\ndata: b\n", []got{{kind: Event, data: "a"}}},
		{"unknown field ignored", "retry: 10\nfoo: bar\ndata: z\n\n", []got{{kind: Event, data: "z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte"} {
				var r io.Reader = strings.NewReader(tt.in)
				if mode == "one byte" {
					r = iotest.OneByteReader(r)
				}
				out, raw, err := readAll(t, r)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s: got error %v, want io.EOF", mode, err)
				}
				if len(out) != len(tt.want) {
					t.Fatalf("%s: got %d pieces %+v, want %d %+v", mode, len(out), out, len(tt.want), tt.want)
				}
				for i := range out {
					if out[i] != tt.want[i] {
						t.Errorf("%s: piece %d: got %+v, want %+v", mode, i, out[i], tt.want[i])
					}
				}
				if !strings.HasPrefix(tt.in, raw) {
					t.Errorf("%s: raw %q is not a prefix of the input %q", mode, raw, tt.in)
				}
			}
		})
	}
}

func TestTooLong(t *testing.T) {
	rd := NewReaderSize(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 32)
	if _, err := rd.Next(); !errors.Is(err, ErrTooLong) {
		t.Errorf("got %v, want ErrTooLong", err)
	}
}

// reference is a plain reading of the standard: normalise line endings,
// split, interpret. Its events must equal the Reader's.
func reference(in string) []got {
	in = strings.ReplaceAll(in, "\r\n", "\n")
	in = strings.ReplaceAll(in, "\r", "\n")
	lines := strings.Split(in, "\n")
	lines = lines[:len(lines)-1] // the last element is an incomplete line
	var out []got
	var data []string
	hasData := false
	typ, id := "", ""
	for _, l := range lines {
		if l == "" {
			if hasData {
				out = append(out, got{kind: Event, typ: typ, id: id, data: strings.Join(data, "\n")})
			}
			data, hasData, typ = nil, false, ""
			continue
		}
		if l[0] == ':' {
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			typ = value
		case "data":
			data, hasData = append(data, value), true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	return out
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: x\n\n", ": ping\n\n", "event: e\r\ndata: 1\r\n\r\n", "data: a\r\rid: 3\ndata:b\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = bytes.NewReader(in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			out, raw, err := readAll(t, r)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("got error %v, want io.EOF", err)
			}
			if !bytes.HasPrefix(in, []byte(raw)) {
				t.Fatalf("raw %q is not a prefix of the input %q", raw, in)
			}
			var events []got
			for _, g := range out {
				if g.kind == Event {
					events = append(events, g)
				}
			}
			want := reference(string(in))
			if len(events) != len(want) {
				t.Fatalf("got %d events %+v, want %d %+v", len(events), events, len(want), want)
			}
			for i := range want {
				if events[i] != want[i] {
					t.Fatalf("event %d: got %+v, want %+v", i, events[i], want[i])
				}
			}
		}
	})
}

// String names a kind in the tests' messages.
func (k Kind) String() string {
	switch k {
	case Comment:
		return "comment"
	case Event:
		return "event"
	case Empty:
		return "empty"
	}
	return "Kind(?)"
}

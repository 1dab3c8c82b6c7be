package proc

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// procArgsBuf builds a kern.procargs2 buffer: argc, the executable's path,
// pad NULs, the arguments, the environment, then rest (apple strings).
func procArgsBuf(argc int32, path string, pad int, args, env []string, rest string) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(argc))
	b = append(b, path...)
	b = append(b, make([]byte, 1+pad)...)
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	for _, e := range env {
		b = append(append(b, e...), 0)
	}
	return append(b, rest...)
}

func TestParseProcArgs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       []byte
		argv     []string
		env      []string
		wantFail bool
	}{
		{"plain", procArgsBuf(2, "/bin/sleep", 5, []string{"sleep", "10"}, []string{"A=1", "B=2"}, "\x00ptr_munge=\x00"), []string{"sleep", "10"}, []string{"A=1", "B=2"}, false},
		{"no padding", procArgsBuf(1, "/bin/sh", 0, []string{"sh"}, nil, "\x00"), []string{"sh"}, nil, false},
		{"empty argument", procArgsBuf(3, "/bin/echo", 2, []string{"echo", "", "x"}, []string{"K=V"}, ""), []string{"echo", "", "x"}, []string{"K=V"}, false},
		{"no argc", procArgsBuf(0, "/bin/x", 1, nil, []string{"K=V"}, "\x00"), []string{}, []string{"K=V"}, false},
		{"environment cut short", append(procArgsBuf(1, "/x", 0, []string{"x"}, []string{"A=1"}, ""), "B=trunc"...), []string{"x"}, []string{"A=1"}, false},
		{"arguments cut short", procArgsBuf(3, "/x", 0, []string{"x"}, nil, ""), nil, nil, true},
		{"negative argc", procArgsBuf(-1, "/x", 0, nil, nil, ""), nil, nil, true},
		{"no path end", binary.NativeEndian.AppendUint32(nil, 1), nil, nil, true},
		{"short", []byte{1, 0}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, env, err := parseProcArgs(tc.in)
			if (err != nil) != tc.wantFail {
				t.Fatalf("parseProcArgs: error %v, want error %v", err, tc.wantFail)
			}
			if tc.wantFail {
				return
			}
			if !reflect.DeepEqual(argv, tc.argv) {
				t.Errorf("argv: got %q, want %q", argv, tc.argv)
			}
			if !reflect.DeepEqual(env, tc.env) {
				t.Errorf("env: got %q, want %q", env, tc.env)
			}
		})
	}
}

func FuzzParseProcArgs(f *testing.F) {
	f.Add(procArgsBuf(2, "/bin/sleep", 5, []string{"sleep", "10"}, []string{"A=1"}, "\x00apple\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		argv, _, err := parseProcArgs(b)
		if err == nil && len(b) >= 4 {
			if argc := int(int32(binary.NativeEndian.Uint32(b))); len(argv) != argc {
				t.Errorf("got %d arguments, argc says %d", len(argv), argc)
			}
		}
	})
}

func TestStateLetter(t *testing.T) {
	for _, tc := range []struct {
		pstat int8
		want  byte
	}{{1, 'R'}, {2, 'R'}, {3, 'S'}, {4, 'T'}, {5, 'Z'}, {0, '?'}, {9, '?'}} {
		if got := stateLetter(tc.pstat); got != tc.want {
			t.Errorf("stateLetter(%d): got %q, want %q", tc.pstat, got, tc.want)
		}
	}
}

func TestMicros(t *testing.T) {
	for _, tc := range []struct {
		sec, usec int64
		want      uint64
	}{{0, 0, 0}, {1, 5, 1_000_005}, {1_700_000_000, 999_999, 1_700_000_000_999_999}, {-1, 0, 0}} {
		if got := micros(tc.sec, tc.usec); got != tc.want {
			t.Errorf("micros(%d, %d): got %d, want %d", tc.sec, tc.usec, got, tc.want)
		}
	}
}

package boolflag

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestPlain: the help shows a boolean flag as "-v, --verbose", and the flag
// parses as before, bare or with a value.
func TestPlain(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"absent", nil, false},
		{"bare", []string{"--verbose"}, true},
		{"short", []string{"-v"}, true},
		{"explicit false", []string{"--verbose=false"}, false},
		{"explicit true", []string{"--verbose=true"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			v := fs.BoolP("verbose", "v", false, "say more")
			fs.String("name", "", "a name")
			Plain(fs)
			Plain(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := fs.GetBool("verbose")
			if err != nil || got != tt.want || *v != tt.want {
				t.Errorf("verbose = %v (%v, var %v), want %v", got, err, *v, tt.want)
			}
			u := fs.FlagUsages()
			if strings.Contains(u, "[=") || !strings.Contains(u, "-v, --verbose ") {
				t.Errorf("usage:\n%s\nwant \"-v, --verbose\" with no [=true|false]", u)
			}
		})
	}
}

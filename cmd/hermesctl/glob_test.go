package main

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
)

// TestExpandUnits checks the expansion of unit patterns: each in place,
// its matches sorted; literal names kept, known or not; each name once;
// no match an error matching control.ErrUnknownUnit; a malformed pattern a
// usage error; and no question asked when no argument is a pattern.
func TestExpandUnits(t *testing.T) {
	known := []string{"web-b", "web-a", "api", "web-ab", "db"}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr error
		usage   bool
	}{
		{name: "literal", args: []string{"nope", "api"}, want: []string{"nope", "api"}},
		{name: "star", args: []string{"web-*"}, want: []string{"web-a", "web-ab", "web-b"}},
		{name: "question", args: []string{"api", "web-?"}, want: []string{"api", "web-a", "web-b"}},
		{name: "class", args: []string{"[ad]*"}, want: []string{"api", "db"}},
		{name: "once", args: []string{"web-a", "web-*", "web-a"}, want: []string{"web-a", "web-ab", "web-b"}},
		{name: "escaped", args: []string{`\api`}, want: []string{"api"}},
		{name: "no match", args: []string{"api", "x*"}, wantErr: control.ErrUnknownUnit},
		{name: "malformed", args: []string{"web-["}, usage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			names := func(context.Context, *globals) ([]string, string, error) {
				asked = true
				return slices.Clone(known), "the test's units", nil
			}
			got, err := expandUnits(t.Context(), &globals{}, tc.args, names)
			var ee *exitError
			switch {
			case tc.usage:
				if !errors.As(err, &ee) || ee.code != exitcode.Usage {
					t.Fatalf("expandUnits(%q): error %v, want a usage error", tc.args, err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, errNoMatch) {
					t.Fatalf("expandUnits(%q): error %v, want one matching %v", tc.args, err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("expandUnits(%q): %v", tc.args, err)
			case !slices.Equal(got, tc.want):
				t.Errorf("expandUnits(%q) = %q, want %q", tc.args, got, tc.want)
			}
			if want := slices.ContainsFunc(tc.args, isPattern); asked != want {
				t.Errorf("expandUnits(%q) asked for the names: %v, want %v", tc.args, asked, want)
			}
		})
	}
}

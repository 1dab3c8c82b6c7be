package units

import (
	"encoding/json"
	"testing"
)

func TestOwnershipRoundTrip(t *testing.T) {
	for _, o := range []Ownership{Owned, Adoptable, PersistOnRelease} {
		t.Run(string(o), func(t *testing.T) {
			got, err := ParseOwnership(string(o))
			if err != nil || got != o {
				t.Fatalf("ParseOwnership(%q) = %q, %v; want %q", o, got, err, o)
			}
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"` + string(o) + `"`; string(b) != want {
				t.Errorf("json.Marshal(%q) = %s, want %s", o, b, want)
			}
			var back Ownership
			if err := json.Unmarshal(b, &back); err != nil || back != o {
				t.Errorf("json.Unmarshal(%s) = %q, %v; want %q", b, back, err, o)
			}
		})
	}
	for _, bad := range []string{"Owned", "persist-on-release", "gateway"} {
		t.Run("refuses "+bad, func(t *testing.T) {
			if o, err := ParseOwnership(bad); err == nil {
				t.Errorf("ParseOwnership(%q) = %q, want an error", bad, o)
			}
			var o Ownership
			if err := json.Unmarshal([]byte(`"`+bad+`"`), &o); err == nil {
				t.Errorf("json.Unmarshal(%q) = %q, want an error", bad, o)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		if o, err := ParseOwnership(""); err == nil {
			t.Errorf(`ParseOwnership("") = %q, want an error: a unit file says a mode or none`, o)
		}
		o := Adoptable
		if err := json.Unmarshal([]byte(`""`), &o); err != nil || o != "" {
			t.Errorf(`json.Unmarshal("") = %q, %v; want the zero Ownership (not recorded)`, o, err)
		}
		if o.Survivor() {
			t.Error("the zero Ownership is a survivor, want it to count as owned")
		}
	})
}

func TestOwnershipSurvivor(t *testing.T) {
	for _, tt := range []struct {
		o    Ownership
		want bool
	}{{Owned, false}, {Adoptable, true}, {PersistOnRelease, true}} {
		if got := tt.o.Survivor(); got != tt.want {
			t.Errorf("%s.Survivor() = %v, want %v", tt.o, got, tt.want)
		}
	}
}

func TestRoleRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		role   Role
		daemon bool // ParseRole accepts it
	}{{RoleGateway, true}, {RoleWorker, true}, {RoleRun, false}, {"", false}} {
		t.Run(string(tt.role), func(t *testing.T) {
			got, err := ParseRole(string(tt.role))
			if tt.daemon && (err != nil || got != tt.role) {
				t.Errorf("ParseRole(%q) = %q, %v; want %q", tt.role, got, err, tt.role)
			}
			if !tt.daemon && err == nil {
				t.Errorf("ParseRole(%q) = %q, want an error: not a daemon's role", tt.role, got)
			}
			b, err := json.Marshal(tt.role)
			if err != nil {
				t.Fatal(err)
			}
			if want := `"` + string(tt.role) + `"`; string(b) != want {
				t.Errorf("json.Marshal(%q) = %s, want %s", tt.role, b, want)
			}
			var back Role
			if err := json.Unmarshal(b, &back); err != nil || back != tt.role {
				t.Errorf("json.Unmarshal(%s) = %q, %v; want %q", b, back, err, tt.role)
			}
		})
	}
	for _, bad := range []string{"Gateway", "boss", "owned"} {
		var r Role
		if err := json.Unmarshal([]byte(`"`+bad+`"`), &r); err == nil {
			t.Errorf("json.Unmarshal(%q) = %q, want an error", bad, r)
		}
	}
}

// FuzzOwnershipText checks that reading an ownership or a role from text
// accepts exactly what writing it gives back.
func FuzzOwnershipText(f *testing.F) {
	for _, s := range []string{"owned", "adoptable", "persist_on_release", "gateway", "worker", "run", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var o Ownership
		if err := o.UnmarshalText([]byte(s)); err == nil {
			if string(o) != s {
				t.Errorf("Ownership.UnmarshalText(%q) = %q", s, o)
			}
			if _, err := ParseOwnership(s); err != nil && s != "" {
				t.Errorf("UnmarshalText accepts %q, ParseOwnership refuses it: %v", s, err)
			}
		}
		var r Role
		if err := r.UnmarshalText([]byte(s)); err == nil {
			if string(r) != s {
				t.Errorf("Role.UnmarshalText(%q) = %q", s, r)
			}
			if _, err := ParseOwnerRole(s); err != nil {
				t.Errorf("UnmarshalText accepts %q, ParseOwnerRole refuses it: %v", s, err)
			}
		}
		if p, err := ParseRole(s); err == nil {
			if err := r.UnmarshalText([]byte(p)); err != nil {
				t.Errorf("ParseRole accepts %q, Role.UnmarshalText refuses it: %v", s, err)
			}
		}
	})
}

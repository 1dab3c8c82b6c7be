package control

import "testing"

func TestConfigErrorString(t *testing.T) {
	tests := []struct {
		name string
		e    ConfigError
		want string
	}{
		{"position", ConfigError{File: "/u/web.yaml", Line: 2, Column: 9, Message: "bad"}, "/u/web.yaml:2:9: bad"},
		{"whole file", ConfigError{File: "/u/web.yaml", Message: "is a directory"}, "/u/web.yaml: is a directory"},
		{"no file", ConfigError{Message: "units directory missing"}, "units directory missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

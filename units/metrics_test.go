package units

import (
	"strings"
	"testing"
)

func TestConfigMetrics(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Metrics
		err        string
	}{
		{"off", "gateway:\n  listen: 127.0.0.1:7411\n", Metrics{}, ""},
		{"listen", "metrics:\n  listen: 127.0.0.1:9464\n", Metrics{Listen: "127.0.0.1:9464"}, ""},
		{"token", "metrics:\n  listen: \"[::1]:9464\"\n  token_file: tok\n", Metrics{Listen: "[::1]:9464", TokenFile: "/etc/hermes/tok"}, ""},
		{"bad listen", "metrics:\n  listen: nowhere\n", Metrics{}, "hermes.yaml:2:11: metrics.listen: \"nowhere\" is not host:port"},
		{"unknown key", "metrics:\n  port: 9464\n", Metrics{}, "hermes.yaml:2:3: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("hermes.yaml", "/etc/hermes", []byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Metrics != tc.want {
				t.Errorf("got %+v, want %+v", c.Metrics, tc.want)
			}
		})
	}
}

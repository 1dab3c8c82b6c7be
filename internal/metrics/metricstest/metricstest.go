// Package metricstest reads a Prometheus text exposition as Prometheus
// does (prometheus/common/expfmt), for tests that assert exact values.
package metricstest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed scrape, by metric name.
type Families map[string]*dto.MetricFamily

// Parse parses the text format.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Value is the value of the series named name whose labels are exactly
// labels (name, value pairs): a counter's or gauge's value, a histogram's
// sample count. It is -1 when there is no such series.
func (f Families) Value(name string, labels ...string) float64 {
	fam := f[name]
	if fam == nil {
		return -1
	}
next:
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels)/2 {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// EnvRequirePromtool set to 1 (CI sets it) makes CheckPromtool fail
// instead of skip when promtool is not installed.
const EnvRequirePromtool = "HERMES_REQUIRE_PROMTOOL"

// CheckPromtool runs `promtool check metrics` (Debian package prometheus)
// on a scrape and fails t with its complaints. Without promtool it skips,
// saying so, unless HERMES_REQUIRE_PROMTOOL=1.
func CheckPromtool(t testing.TB, scrape []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv(EnvRequirePromtool) == "1" {
			t.Fatalf("promtool is not installed (apt-get install prometheus) and %s=1", EnvRequirePromtool)
		}
		t.Skip("promtool is not installed (apt-get install prometheus): the metric names are not linted here; CI runs this")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// Series is a series a test expects: its name, its labels (name, value
// pairs, as Value takes them) and its value. It is a struct literal's
// type, so that a table of them reads as rows.
type Series = struct {
	Name   string
	Labels []string
	Want   float64
}

// CheckValues fails t for each of want whose value (Value) is not Want.
func (f Families) CheckValues(t testing.TB, want []Series) {
	t.Helper()
	for _, s := range want {
		if got := f.Value(s.Name, s.Labels...); got != s.Want {
			t.Errorf("%s%v: got %v, want %v (-1: no series)", s.Name, s.Labels, got, s.Want)
		}
	}
}

package metricstest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scrape = `# TYPE hermes_unit_state gauge
hermes_unit_state{state="running",unit="web"} 1
# TYPE hermes_unit_restarts_total counter
hermes_unit_restarts_total{cause="exit",unit="web"} 0
# TYPE hermes_unit_start_to_ready_seconds histogram
hermes_unit_start_to_ready_seconds_bucket{unit="web",le="+Inf"} 1
hermes_unit_start_to_ready_seconds_sum{unit="web"} 0.1
hermes_unit_start_to_ready_seconds_count{unit="web"} 1
`

// TestCheck: a query passes when its series exist with its labels, and
// fails naming what is missing: a metric, a label of a matcher, a series
// the matchers match, a label it groups by.
func TestCheck(t *testing.T) {
	fams, err := Parse(strings.NewReader(scrape))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr, wantErr string
	}{
		{`hermes_unit_state{unit=~"$unit"} == 1`, ""},
		{`sum by (unit, cause) (increase(hermes_unit_restarts_total{unit=~"${unit}"}[$__rate_interval]))`, ""},
		{`histogram_quantile(0.9, sum by (le, unit) (rate(hermes_unit_start_to_ready_seconds_bucket[$__rate_interval])))`, ""},
		{`hermes_unit_start_to_ready_seconds_count`, ""},
		{`hermes_unit_restarts`, "no metric hermes_unit_restarts"},
		{`hermes_unit_state{name="web"}`, `no label "name"`},
		{`hermes_unit_state{state="failed"}`, "no series of hermes_unit_state matches"},
		{`sum by (cause) (hermes_unit_state)`, "groups by [cause]"},
		{`hermes_unit_state{`, "does not parse"},
		{`vector(1)`, "selects no metric"},
	} {
		err := Check(fams, Query{Where: "panel A", Expr: tc.expr})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Check(%q) = %v, want an error with %q", tc.expr, err, tc.wantErr)
		}
	}
	if err := Check(fams, Query{Where: "variable unit", Expr: "hermes_unit_state", LabelValues: "unit"}); err != nil {
		t.Errorf("label_values(hermes_unit_state, unit): %v", err)
	}
	if err := Check(fams, Query{Where: "variable unit", Expr: "hermes_unit_state", LabelValues: "job"}); err == nil {
		t.Error("label_values(hermes_unit_state, job): no error, want one: no such label")
	}
}

// TestDashboardQueries reads a row's panels, and refuses a target with
// no expr.
func TestDashboardQueries(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"panels":[{"title":"r","type":"row","panels":[{"title":"p","targets":[{"refId":"A","expr":"up"}]}]}],
		"templating":{"list":[{"name":"unit","type":"query","query":{"query":"label_values(hermes_unit_state, unit)"}}]}}`), 0o600)
	qs, err := DashboardQueries(good)
	if err != nil || len(qs) != 2 || qs[0].Expr != "up" || qs[1].LabelValues != "unit" {
		t.Errorf("DashboardQueries = %+v, %v; want the row's panel's up and the variable's label_values", qs, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"panels":[{"title":"p","targets":[{"refId":"A"}]}]}`), 0o600)
	if _, err := DashboardQueries(bad); err == nil {
		t.Error("a target with no expr: no error")
	}
}

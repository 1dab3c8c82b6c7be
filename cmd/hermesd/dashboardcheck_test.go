package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-units/hermes/internal/metrics/metricstest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashQuery is one PromQL expression of a Grafana dashboard, and where it is.
type dashQuery struct {
	Where string // the panel's title and the target's refId, or the variable's name
	Expr  string
	// LabelValues is set for a variable's label_values(metric, label)
	// query (Grafana's, not PromQL): Expr is then the metric.
	LabelValues string
}

// dashboard is the part of Grafana's dashboard JSON the queries are in.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// dashboardQueries reads every query of the Grafana dashboard at path:
// every panel target's expr (rows' panels included) and every query
// variable's label_values. A target without an expr is an error: a query
// the check would not see.
func dashboardQueries(path string) ([]dashQuery, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []dashQuery
	var walk func([]panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					return fmt.Errorf("%s: panel %q target %s has no expr", path, p.Title, tg.RefID)
				}
				out = append(out, dashQuery{Where: p.Title + " " + tg.RefID, Expr: tg.Expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		var s string
		if json.Unmarshal(v.Query, &s) != nil {
			if err := json.Unmarshal(v.Query, &q); err != nil {
				return nil, fmt.Errorf("%s: variable %s: query: %w", path, v.Name, err)
			}
			s = q.Query
		}
		m := labelValues.FindStringSubmatch(strings.TrimSpace(s))
		if m == nil {
			return nil, fmt.Errorf("%s: variable %s: query %q is not label_values(metric, label)", path, v.Name, s)
		}
		out = append(out, dashQuery{Where: "variable " + v.Name, Expr: m[1], LabelValues: m[2]})
	}
	return out, nil
}

// grafanaVars stand for Grafana's variables in a query so that it parses
// as PromQL: the intervals as durations, any other $name or ${name} as a
// regular expression that matches every value (as "All" does).
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

var otherVar = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*(:[a-z]+)?\}?`)

// checkQuery parses q as PromQL (Grafana's variables replaced) and checks it
// against a scrape: every metric it selects has a series in fams that
// every label matcher of the selector matches, and every label it groups
// by (by (...)) is a label of the series of the selectors below. A
// histogram's _bucket, _sum and _count select its family (_bucket with
// its le label).
func checkQuery(fams metricstest.Families, q dashQuery) error {
	if q.LabelValues != "" {
		if _, err := series(fams, q.Expr, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, q.LabelValues, ".+")}); err != nil {
			return fmt.Errorf("%s: label_values(%s, %s): %w", q.Where, q.Expr, q.LabelValues, err)
		}
		return nil
	}
	text := otherVar.ReplaceAllString(grafanaVars.Replace(q.Expr), ".*")
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(text)
	if err != nil {
		return fmt.Errorf("%s: %q does not parse: %w", q.Where, text, err)
	}
	var errs []error
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			selectors++
			if _, err := series(fams, n.Name, n.LabelMatchers); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", q.Where, n, err))
			}
		case *parser.AggregateExpr:
			if err := grouped(fams, n); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", q.Where, n, err))
			}
		}
		return nil
	})
	if selectors == 0 {
		errs = append(errs, fmt.Errorf("%s: %q selects no metric", q.Where, q.Expr))
	}
	return errors.Join(errs...)
}

// series returns the label sets of name's series in fams that every
// matcher matches (the __name__ matcher aside), or an error saying what
// is missing: the metric, a label, or a series that matches.
func series(fams metricstest.Families, name string, ms []*labels.Matcher) ([]map[string]string, error) {
	fam, extra := family(fams, name)
	if fam == nil {
		return nil, fmt.Errorf("no metric %s in the scrape", name)
	}
	var sets []map[string]string
	for _, m := range fam.Metric {
		set := map[string]string{}
		for _, l := range m.Label {
			set[l.GetName()] = l.GetValue()
		}
		if extra != "" {
			set[extra] = "+Inf" // a _bucket series has le
		}
		sets = append(sets, set)
	}
	var out []map[string]string
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			continue
		}
		if !slices.ContainsFunc(sets, func(s map[string]string) bool { _, ok := s[m.Name]; return ok }) {
			return nil, fmt.Errorf("%s has no label %q (its series: %v)", name, m.Name, sets)
		}
	}
	for _, s := range sets {
		if !slices.ContainsFunc(ms, func(m *labels.Matcher) bool { return m.Name != model.MetricNameLabel && !m.Matches(s[m.Name]) }) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no series of %s matches %v (its series: %v)", name, ms, sets)
	}
	return out, nil
}

// family is the family a selector's metric name is a series of: itself,
// or the histogram or summary whose _bucket, _sum or _count it is (extra
// is "le" for a histogram's _bucket).
func family(fams metricstest.Families, name string) (fam *dto.MetricFamily, extra string) {
	if f := fams[name]; f != nil {
		return f, ""
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		f := fams[base]
		if !ok || f == nil || f.GetType() != dto.MetricType_HISTOGRAM && f.GetType() != dto.MetricType_SUMMARY {
			continue
		}
		if suffix == "_bucket" {
			if f.GetType() != dto.MetricType_HISTOGRAM {
				return nil, ""
			}
			return f, "le"
		}
		return f, ""
	}
	return nil, ""
}

// grouped checks that the labels of a's by (...) are labels of the series
// its selectors select (without (...) drops labels: nothing to check).
func grouped(fams metricstest.Families, a *parser.AggregateExpr) error {
	if a.Without || len(a.Grouping) == 0 {
		return nil
	}
	have := map[string]bool{}
	parser.Inspect(a.Expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			sets, _ := series(fams, vs.Name, vs.LabelMatchers)
			for _, s := range sets {
				for l := range s {
					have[l] = true
				}
			}
		}
		return nil
	})
	var missing []string
	for _, l := range a.Grouping {
		if !have[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("groups by %v, which its series do not have", missing)
	}
	return nil
}

const dashScrape = `# TYPE hermes_unit_state gauge
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
func TestCheckQuery(t *testing.T) {
	fams, err := metricstest.Parse(strings.NewReader(dashScrape))
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
		err := checkQuery(fams, dashQuery{Where: "panel A", Expr: tc.expr})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("checkQuery(%q) = %v, want an error with %q", tc.expr, err, tc.wantErr)
		}
	}
	if err := checkQuery(fams, dashQuery{Where: "variable unit", Expr: "hermes_unit_state", LabelValues: "unit"}); err != nil {
		t.Errorf("label_values(hermes_unit_state, unit): %v", err)
	}
	if err := checkQuery(fams, dashQuery{Where: "variable unit", Expr: "hermes_unit_state", LabelValues: "job"}); err == nil {
		t.Error("label_values(hermes_unit_state, job): no error, want one: no such label")
	}
}

// TestReadDashboardQueries: dashboardQueries reads a row's panels, and refuses a target with
// no expr.
func TestReadDashboardQueries(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"panels":[{"title":"r","type":"row","panels":[{"title":"p","targets":[{"refId":"A","expr":"up"}]}]}],
		"templating":{"list":[{"name":"unit","type":"query","query":{"query":"label_values(hermes_unit_state, unit)"}}]}}`), 0o600)
	qs, err := dashboardQueries(good)
	if err != nil || len(qs) != 2 || qs[0].Expr != "up" || qs[1].LabelValues != "unit" {
		t.Errorf("dashboardQueries = %+v, %v; want the row's panel's up and the variable's label_values", qs, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"panels":[{"title":"p","targets":[{"refId":"A"}]}]}`), 0o600)
	if _, err := dashboardQueries(bad); err == nil {
		t.Error("a target with no expr: no error")
	}
}

package daemon

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the shipped Grafana dashboard.
const dashboardFile = "../contrib/grafana/uiod.json"

// promIdent matches a PromQL identifier: metric names, functions, labels, keywords.
var promIdent = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// legendLabel matches a {{label}} in a legend format.
var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// TestDashboardMetricsExist: every metric the Grafana dashboard queries (panel targets
// and template variables) is in a live scrape of a sim daemon, and every label a legend
// names is a label of the metrics its query reads (or one Prometheus adds).
func TestDashboardMetricsExist(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	_, fams := liveScrape(t, "ddash")
	labels := func(name string) (map[string]bool, bool) {
		f, ok := fams[name]
		if !ok {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(name, suf); cut {
					if f, ok = fams[base]; ok {
						break
					}
				}
			}
		}
		if !ok {
			return nil, false
		}
		ls := map[string]bool{"instance": true, "job": true}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			ls["le"] = true
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = true
			}
		}
		return ls, true
	}
	queries := 0
	var walk func(v any, path string)
	check := func(expr, legend, path string) {
		queries++
		used := map[string]bool{}
		names := 0
		for _, id := range promIdent.FindAllString(expr, -1) {
			if !strings.HasPrefix(id, "uiod_") && !strings.HasPrefix(id, "process_") && !strings.HasPrefix(id, "go_") {
				continue
			}
			names++
			ls, ok := labels(id)
			if !ok {
				t.Errorf("%s: %s queries %s, which a scrape does not have", dashboardFile, path, id)
				continue
			}
			for l := range ls {
				used[l] = true
			}
		}
		if names == 0 {
			t.Errorf("%s: %s: query %q reads no uiod metric", dashboardFile, path, expr)
		}
		for _, m := range legendLabel.FindAllStringSubmatch(legend, -1) {
			if !used[m[1]] {
				t.Errorf("%s: %s: legend %q names label %s, which %q does not have", dashboardFile, path, legend, m[1], expr)
			}
		}
	}
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if expr, ok := v["expr"].(string); ok {
				legend, _ := v["legendFormat"].(string)
				check(expr, legend, path)
			}
			if def, ok := v["definition"].(string); ok && v["type"] == "query" {
				check(def, "", path+" (template variable)")
			}
			for k, sub := range v {
				p := path
				if title, ok := v["title"].(string); ok {
					p = "panel " + strings.TrimSpace(title)
				}
				walk(sub, p+"/"+k)
			}
		case []any:
			for _, sub := range v {
				walk(sub, path)
			}
		}
	}
	walk(dash, "")
	if queries < 10 {
		t.Fatalf("%s has %d queries, want panels for rates, drops, wake-ups, CPU and the idle policy", dashboardFile, queries)
	}
}

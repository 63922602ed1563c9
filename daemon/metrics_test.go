package daemon

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// liveScrape starts a sim daemon, forwards frames through it both ways and returns a
// scrape of its /metrics, raw and parsed.
func liveScrape(t *testing.T, name string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	d, base := startDaemon(t, simConfig(t, name, "adaptive", ", idle_threshold: auto"))
	e := openFarEnds(t, name)
	if !e.sendBoth(t, 100, 0, 0) {
		t.Fatalf("forwarded %d and %d of 100 frames; status %+v", e.sink[1].count(), e.sink[0].count(), d.Status())
	}
	body := get(t, base+"/metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("scrape is not the Prometheus text format: %v", err)
	}
	return body, fams
}

// nonBaseUnit matches a metric name that carries a unit other than Prometheus's base
// units (seconds, bytes) or a ratio other than 0-1.
var nonBaseUnit = regexp.MustCompile(`_(ns|us|ms|nsec|usec|msec|nanoseconds|microseconds|milliseconds|minutes|hours|days|kb|kib|mb|mib|gb|gib|bits|kbps|mbps|percent)(_total)?$`)

// TestMetricsConventions: every uiod metric of a live scrape follows the Prometheus
// naming conventions (counters end in _total and nothing else does, base units only,
// help text), and `promtool check metrics` finds nothing in the scrape.
func TestMetricsConventions(t *testing.T) {
	body, fams := liveScrape(t, "dprom")
	n := 0
	for name, f := range fams {
		if !strings.HasPrefix(name, "uiod_") {
			continue
		}
		n++
		isCounter := f.GetType() == dto.MetricType_COUNTER
		if isCounter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s is a %v: counters and only counters end in _total", name, f.GetType())
		}
		if nonBaseUnit.MatchString(name) {
			t.Errorf("%s: not a base unit (seconds, bytes, ratios 0-1)", name)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
		if len(f.GetMetric()) == 0 {
			t.Errorf("%s has no sample", name)
		}
	}
	if n < 20 {
		t.Fatalf("scrape has %d uiod metrics, want the port, queue and thread families", n)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus): the naming checks above ran, promtool's did not")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

package latency

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"image"
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// resultOf builds a Result whose histogram holds exactly values.
func resultOf(label string, values ...int64) *Result {
	r := &Result{Label: label, Hist: newHistogram(), Sent: uint64(len(values)), Received: uint64(len(values))}
	for i, v := range values {
		r.Hist.RecordValue(v)
		if i == 0 || v < r.MinNs {
			r.MinNs = v
		}
		r.MaxNs = max(r.MaxNs, v)
	}
	return r
}

func TestMoonGenLine(t *testing.T) {
	seq := make([]int64, 100)
	for i := range seq {
		seq[i] = int64(i + 1)
	}
	tests := []struct {
		r    *Result
		want string
	}{
		{resultOf("test", 100, 200, 300, 400),
			"[test] Samples: 4, Average: 250.0 ns, StdDev: 129.1 ns, Quartiles: 200.0/300.0/400.0 ns, p99: 400 ns, p99.9: 400 ns, Max: 400 ns, Lost: 0/4"},
		{resultOf("seq", seq...),
			"[seq] Samples: 100, Average: 50.5 ns, StdDev: 29.0 ns, Quartiles: 26.0/51.0/76.0 ns, p99: 100 ns, p99.9: 100 ns, Max: 100 ns, Lost: 0/100"},
		{resultOf("", 1500),
			"Samples: 1, Average: 1500.0 ns, StdDev: 0.0 ns, Quartiles: 1500.0/1500.0/1500.0 ns, p99: 1500 ns, p99.9: 1500 ns, Max: 1500 ns, Lost: 0/1"},
	}
	for _, tt := range tests {
		if got := tt.r.MoonGen(); got != tt.want {
			t.Errorf("MoonGen()\n got %s\nwant %s", got, tt.want)
		}
	}
	lossy := resultOf("l", 10, 20)
	lossy.Sent, lossy.Lost, lossy.Late, lossy.Duplicates, lossy.Reordered = 5, 2, 1, 3, 4
	want := "[l] Samples: 2, Average: 15.0 ns, StdDev: 7.1 ns, Quartiles: 20.0/20.0/20.0 ns, p99: 20 ns, p99.9: 20 ns, Max: 20 ns, Lost: 2/5, Late: 1, Duplicates: 3, Reordered: 4"
	if got := lossy.MoonGen(); got != want {
		t.Errorf("MoonGen() with loss\n got %s\nwant %s", got, want)
	}
	empty := &Result{Label: "none"}
	if got := empty.MoonGen(); got != "[none] Samples: 0, Average: 0.0 ns, StdDev: 0.0 ns, Quartiles: 0.0/0.0/0.0 ns, p99: 0 ns, p99.9: 0 ns, Max: 0 ns, Lost: 0/0" {
		t.Errorf("empty: %s", got)
	}
}

func TestSummaryTail(t *testing.T) {
	// 2000 samples of 1000 ns and one of 50 µs: p99.9 is still 1000, max is the outlier.
	vals := make([]int64, 2000)
	for i := range vals {
		vals[i] = 1000
	}
	s := resultOf("", append(vals, 50000)...).Summary()
	if s.P99 != 1000 || s.P999 != 1000 || s.Max != 50000 || s.Min != 1000 {
		t.Fatalf("summary %+v", s)
	}
}

func TestWriteCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := resultOf("x", 300, 100, 100, 200).WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"latency", "count"}, {"100", "2"}, {"200", "1"}, {"300", "1"}}
	if len(rows) != len(want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for i := range want {
		if rows[i][0] != want[i][0] || rows[i][1] != want[i][1] {
			t.Fatalf("rows %v, want %v", rows, want)
		}
	}
	// Large values land in buckets; counts still add up.
	buf.Reset()
	resultOf("x", 1_000_000, 1_000_001, 7_654_321).WriteCSV(&buf)
	rows, _ = csv.NewReader(&buf).ReadAll()
	var total int
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[1])
		total += n
	}
	if total != 3 {
		t.Fatalf("CSV counts add up to %d, want 3", total)
	}
}

func TestJSON(t *testing.T) {
	r := resultOf("j", 100, 200, 300, 400)
	r.Lost, r.Pattern = 1, "constant:400µs"
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{"samples": 4, "average_ns": 250, "median_ns": 300, "max_ns": 400, "lost": 1, "p99_ns": 400} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if got["label"] != "j" || got["pattern"] != "constant:400µs" {
		t.Errorf("label/pattern: %v %v", got["label"], got["pattern"])
	}
	h, ok := got["histogram"].([]any)
	if !ok || len(h) != 4 {
		t.Fatalf("histogram %v", got["histogram"])
	}
	if first := h[0].(map[string]any); first["latency_ns"] != 100.0 || first["count"] != 1.0 {
		t.Fatalf("first bucket %v", first)
	}
	if _, ok := got["pacing"].(map[string]any); !ok {
		t.Fatal("no pacing object")
	}
}

func TestWritePlot(t *testing.T) {
	a := resultOf("busy", 5000, 6000, 6500, 7000, 9000, 15000)
	b := resultOf("adaptive", 20000, 25000, 30000, 80000, 200000)
	dir := t.TempDir()

	png := filepath.Join(dir, "lat.png")
	if err := WritePlot(png, []*Result{a, b}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(png)
	magic := make([]byte, 8)
	io.ReadFull(f, magic)
	f.Seek(0, io.SeekStart)
	img, format, err := image.Decode(f)
	f.Close()
	if err != nil || format != "png" || !bytes.Equal(magic, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("PNG: format %q, magic % x, %v", format, magic, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("PNG is %v", b)
	}

	svg := filepath.Join(dir, "lat.svg")
	if err := WritePlot(svg, []*Result{a, b}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(svg)
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(data, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("SVG: root %q, %v", doc.XMLName.Local, err)
	}
	if !bytes.Contains(data, []byte("adaptive")) {
		t.Fatal("SVG has no legend entry for the second series")
	}

	if err := WritePlot(filepath.Join(dir, "lat.jpg"), []*Result{a}); err == nil {
		t.Fatal("WritePlot accepted .jpg")
	}
	if err := WritePlot(filepath.Join(dir, "empty.png"), []*Result{{Label: "none"}}); err == nil {
		t.Fatal("WritePlot of no samples succeeded")
	}
}

func TestWriteCSVRuns(t *testing.T) {
	var buf bytes.Buffer
	a, b := resultOf("busy", 100, 100), resultOf(`sleep:1ms,"x"`, 200)
	if err := WriteCSVRuns(&buf, []*Result{a, b}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"label", "latency", "count"}, {"busy", "100", "2"}, {`sleep:1ms,"x"`, "200", "1"}}
	if len(rows) != len(want) {
		t.Fatalf("rows %q", rows)
	}
	for i := range want {
		for j := range want[i] {
			if rows[i][j] != want[i][j] {
				t.Fatalf("rows %q, want %q", rows, want)
			}
		}
	}
}

// TestSummaryWithinExtremes: above 2048 ns histogram buckets are wider than 1 ns and
// valued at their middle, which can lie beyond the exact minimum and maximum; no
// quantile may be reported outside them.
func TestSummaryWithinExtremes(t *testing.T) {
	for _, vals := range [][]int64{
		{2167451},
		{698431},
		{4096, 2167451, 2167452, 2167453},
		{1000, 3001, 3001, 3001, 2816001},
	} {
		s := resultOf("", vals...).Summary()
		for name, q := range map[string]int64{"q1": s.Q1, "median": s.Median, "q3": s.Q3, "p99": s.P99, "p99.9": s.P999} {
			if q < s.Min || q > s.Max {
				t.Errorf("%v: %s %d outside [min %d, max %d]", vals, name, q, s.Min, s.Max)
			}
		}
	}
}

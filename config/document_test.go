package config

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// nested returns a document whose poll section nests n mappings deep, in flow or block
// style: about 5 bytes a level. Read in viper, such a document took time cubic in its
// depth (12 KiB, 35 s).
func nested(n int, block bool) string {
	if !block {
		return "poll: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + "\n"
	}
	var b strings.Builder
	b.WriteString("poll:\n")
	for i := 1; i <= n; i++ {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", n+1) + "b: 1\n")
	return b.String()
}

// TestDeepDocumentIsRefusedFast checks that reading time stays linear in the document:
// a 12 KiB deeply nested file is refused at once as too deep. The budget is generous for
// a loaded machine; the file took 35 s before the depth limit.
func TestDeepDocumentIsRefusedFast(t *testing.T) {
	for _, block := range []bool{false, true} {
		doc := nested(2500, false)
		if block {
			doc = nested(140, true) // indentation makes a deep block document long
		}
		if !block && len(doc) < 10000 {
			t.Fatalf("document only %d bytes", len(doc))
		}
		start := time.Now()
		_, err := read(t, doc)
		took := time.Since(start)
		var le *LimitError
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.As(err, &le) || le.What != "depth" || !strings.Contains(err.Error(), "deep") {
			t.Errorf("block %v: error %v, want a *ParseError about the depth", block, err)
		}
		if took > 5*time.Second {
			t.Errorf("block %v: %d bytes took %v to refuse", block, len(doc), took)
		}
	}
	// Within the limit, nesting is an unknown key like any other.
	_, err := read(t, simPorts+nested(MaxDepth-3, false))
	if errs := fieldErrs(t, err); len(errs) != 1 || errs[0].Path != "poll.a" {
		t.Errorf("nesting within the limit: %v", err)
	}
}

// laughs returns a document of levels nested aliases, each list holding width uses of the
// one before: it expands to width^levels values.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString(simPorts + "x0: &x0 [" + strings.TrimSuffix(strings.Repeat(`"lol",`, width), ",") + "]\n")
	for i := 1; i < levels; i++ {
		b.WriteString("x" + string(rune('0'+i)) + ": &x" + string(rune('0'+i)) + " [")
		b.WriteString(strings.TrimSuffix(strings.Repeat("*x"+string(rune('0'+i-1))+",", width), ","))
		b.WriteString("]\n")
	}
	return b.String()
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestDocumentLimits(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // LimitError.What, or a substring of the ParseError
	}{
		{"over the size limit", simPorts + "# " + strings.Repeat("x", MaxDocumentSize), "size"},
		{"billion laughs", laughs(9, 10), "nodes"},
		{"aliases expanding just past the node limit", laughs(5, 10), "nodes"},
		{"second document", simPorts + "---\npoll: {mode: busy}\n", "second YAML document"},
		{"empty second document", simPorts + "---\n", "second YAML document"},
		{"a list", "- a\n- b\n", "want a mapping"},
		{"a scalar", "ports\n", "want a mapping"},
		{"list as key", "? [a, b]\n: c\n", "plain value"},
		{"merge of a list", "a: &l [1]\nb: {<<: *l}\n", "merges mappings"},
		{"mapping merging itself", "a: &a {<<: *a}\n", "depth"},
		{"top mapping merging itself", "&a {<<: *a}\n", "depth"},
		{"list of itself", "a: &a [*a]\n", "depth"},
		{"mapping holding itself", "a: &a {b: *a}\n", "depth"},
		{"merges multiplying", "x: &x {a: 1, b: [1, 2, 3, 4, 5, 6, 7, 8]}\n" +
			"y: &y {<<: [*x, *x, *x, *x, *x, *x, *x, *x, *x, *x]}\nz: &z {<<: [*y, *y, *y, *y, *y, *y, *y, *y, *y, *y]}\n" +
			"w: &w {<<: [*z, *z, *z, *z, *z, *z, *z, *z, *z, *z]}\nv: &v {<<: [*w, *w, *w, *w, *w, *w, *w, *w, *w, *w]}\n" +
			"u: {<<: [*v, *v, *v, *v, *v, *v, *v, *v, *v, *v]}\n", "nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.doc)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *ParseError", err, err)
			}
			var le *LimitError
			if errors.As(err, &le) {
				if le.What != tt.want {
					t.Errorf("limit %q crossed, want %q: %v", le.What, tt.want, err)
				}
			} else if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
		})
	}
	if _, err := read(t, "---\n"+simPorts+"...\n"); err != nil {
		t.Errorf("one document with start and end markers: %v", err)
	}
	// Exactly at the size limit is fine (as far as size goes).
	doc := simPorts + "#"
	doc += strings.Repeat("x", MaxDocumentSize-len(doc)-1) + "\n"
	if _, err := read(t, doc); err != nil {
		t.Errorf("document of exactly %d bytes: %v", len(doc), err)
	}
	// A reader that fails is an I/O error, not a problem with the configuration.
	_, err := Loader{Host: &testHost}.Read(io.MultiReader(strings.NewReader(simPorts), failingReader{}))
	var pe *ParseError
	var ve *ValidationError
	if err == nil || errors.As(err, &pe) || errors.As(err, &ve) || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("failing reader: %v (%T)", err, err)
	}
}

func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		name, doc, path string
		msg             []string
	}{
		{"case at the top", simPorts + "poll: {mode: busy}\nPoll: {mode: sleep}\n", "Poll", []string{`"poll" (line 5)`, `"Poll" (line 6)`, "differ only in case"}},
		{"case in a port", "ports:\n  - {name: a, driver: sim, wire: \"pair:a\", RX_RING: 64, rx_ring: 128}\nforward: {mode: reflect}\n", "ports[0].rx_ring", []string{`"RX_RING"`, `"rx_ring"`}},
		{"case in a section", simPorts + "poll:\n  Mode: busy\n  mode: sleep\n", "poll.mode", []string{`"Mode" (line 6)`, `"mode" (line 7)`}},
		{"exact duplicate", simPorts + "log: {level: info, level: debug}\n", "log.level", []string{"given twice (lines 5 and 5)"}},
		{"duplicate through an alias", simPorts + "log:\n  ? &k level\n  : info\n  *k : debug\n", "log.level", []string{"given twice (lines 6 and 8)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.doc)
			wantOneError(t, err, tt.path, tt.msg...)
		})
	}
}

func TestAnchorsAndMerges(t *testing.T) {
	c, err := read(t, `
ports:
  - &p {name: a, driver: sim, wire: "pair:a", rx_ring: 1024}
  - <<: *p
    name: b
    wire: "pair:b"
  - <<: [{rx_ring: 2048}, *p]
    name: c
    wire: "pair:c"
forward: {mode: reflect}
`)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1024, 1024, 2048} {
		if c.Ports[i].RxRing != want || c.Ports[i].Driver != DriverSim {
			t.Errorf("ports[%d]: rx_ring %d driver %q, want %d sim", i, c.Ports[i].RxRing, c.Ports[i].Driver, want)
		}
	}
	if c.Ports[1].Name != "b" || c.Ports[1].Wire.Name != "b" {
		t.Errorf("merge overrode the port's own keys: %+v", c.Ports[1])
	}
}

// TestWideDocumentIsLinear checks that many keys, list items or errors cost time linear
// in their number: 30 000 unknown keys took 14 s when viper merged them (quadratic in the
// keys of one mapping), 30 000 duplicate CPUs 6 s to report. The budget is generous for a
// loaded machine.
func TestWideDocumentIsLinear(t *testing.T) {
	var keys strings.Builder
	for i := range 30000 {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
	}
	tests := []struct {
		name, doc, firstPath string
		errors               int
	}{
		{"unknown keys", simPorts + keys.String(), "k0", 30000},
		{"duplicate CPUs", simPorts + "poll: {cpus: [" + strings.Repeat("0,", 30000) + "0]}\n", "poll.cpus[1]", 30000},
		{"repeated pairs", simPorts + "forward: {pairs: [" + strings.Repeat("[a, b], ", 20000) + "[a, b]]}\n", "forward.pairs[1][0]", 40000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := read(t, tt.doc)
			took := time.Since(start)
			errs := fieldErrs(t, err)
			if len(errs) != tt.errors || errs[0].Path != tt.firstPath {
				t.Errorf("%d errors, first on %s; want %d, first on %s", len(errs), errs[0].Path, tt.errors, tt.firstPath)
			}
			if took > 5*time.Second {
				t.Errorf("%d bytes took %v", len(tt.doc), took)
			}
		})
	}
}

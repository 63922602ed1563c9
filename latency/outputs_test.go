package latency

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsWithoutResults checks that a run interrupted before its first result
// reports that it has nothing to write instead of indexing an empty result list.
func TestOutputsWithoutResults(t *testing.T) {
	var out bytes.Buffer
	for _, o := range []Outputs{{csvStdout: true}, {jsonStdout: true}} {
		if err := o.Write(&out, nil); err == nil || !strings.Contains(err.Error(), "no results") {
			t.Errorf("outputs %+v: err = %v, want one about no results", o, err)
		}
		if err := o.WriteRuns(&out, nil, []string{}); err == nil {
			t.Errorf("outputs %+v with empty runs: no error", o)
		}
	}
	if err := (&Outputs{}).Write(&out, nil); err != nil {
		t.Errorf("no files asked for: %v", err)
	}
}

// TestOpenOutputsNamesOutput checks that an output that cannot be opened is an
// *OutputError naming it, and that the outputs opened before it are removed again.
func TestOpenOutputsNamesOutput(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "h.csv")
	for _, tt := range []struct {
		csv, json, plot, want string
	}{
		{csv, filepath.Join(dir, "nonexistent", "r.json"), "", "json"},
		{csv, "", filepath.Join(dir, "p.jpg"), "plot"},
		{csv, "", "-", "plot"},
		{filepath.Join(dir, "nonexistent", "h.csv"), "", "", "csv"},
	} {
		_, err := OpenOutputs(tt.csv, tt.json, tt.plot)
		var oe *OutputError
		if !errors.As(err, &oe) || oe.Output != tt.want {
			t.Errorf("OpenOutputs(%q, %q, %q) = %v, want an OutputError on %s", tt.csv, tt.json, tt.plot, err, tt.want)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("OpenOutputs(%q, %q, %q) left %q", tt.csv, tt.json, tt.plot, names)
		}
	}
	if _, err := os.Stat(csv); !os.IsNotExist(err) {
		t.Errorf("%s: %v", csv, err)
	}
}

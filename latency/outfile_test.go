package latency

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestOutputFileReplacesOnlyWhenComplete(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.csv")
	if err := os.WriteFile(path, []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A write that fails half way leaves the previous file and no temporary file.
	o, err := CreateOutput(path)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := o.Commit(func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Errorf("Commit = %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "previous\n" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
	// An abandoned output leaves it too.
	o, _ = CreateOutput(path)
	o.Abort()
	if b, _ := os.ReadFile(path); string(b) != "previous\n" || len(dirEntries(t, dir)) != 1 {
		t.Errorf("after Abort: %q, %v", b, dirEntries(t, dir))
	}
	// A complete one replaces it.
	o, _ = CreateOutput(path)
	if err := o.Commit(func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" || len(dirEntries(t, dir)) != 1 {
		t.Errorf("after Commit: %q, %v", b, dirEntries(t, dir))
	}
	if err := o.Commit(func(io.Writer) error { return nil }); err == nil {
		t.Error("second Commit succeeded")
	}
	// Paths that cannot be written fail at once.
	for _, bad := range []string{filepath.Join(dir, "missing", "r.csv"), dir} {
		if _, err := CreateOutput(bad); err == nil {
			t.Errorf("CreateOutput(%s) succeeded", bad)
		}
	}
}

func TestWritePlotWithoutSamples(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.svg")
	if err := os.WriteFile(path, []byte("<svg>previous</svg>"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := &Result{Label: "lost", Hist: newHistogram()}
	if err := WritePlot(path, []*Result{empty}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("WritePlot without samples = %v, want ErrNoSamples", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "<svg>previous</svg>" || len(dirEntries(t, dir)) != 1 {
		t.Errorf("plot without samples left %q, %v", b, dirEntries(t, dir))
	}
	h := newHistogram()
	h.RecordValue(12000)
	if err := WritePlot(path, []*Result{{Label: "one", Hist: h}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "<svg") || strings.Contains(string(b), "previous") {
		t.Errorf("plot not replaced: %.60q", b)
	}
}

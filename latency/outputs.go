package latency

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Outputs are the result files of a run — a CSV histogram, a JSON document and a plot —
// opened before it, so that a path that cannot be written fails before anything is
// measured, and each replaced only by a complete file (see OutputFile). The CSV and the
// JSON may go to standard output instead ("-"); the plot always goes to a file.
type Outputs struct {
	// Title is the plot's title: what was measured ("" for none).
	Title                 string
	csv, json, plot       *OutputFile
	csvStdout, jsonStdout bool
}

// OutputError is an error of one of the outputs: Output is "csv", "json" or "plot".
type OutputError struct {
	Output string
	Err    error
}

func (e *OutputError) Error() string { return e.Output + ": " + e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// ToStdout reports whether the CSV or the JSON goes to standard output: the caller then
// writes everything meant for a person to standard error, so that the output parses.
func (o *Outputs) ToStdout() bool { return o.csvStdout || o.jsonStdout }

// OpenOutputs opens the outputs at the given paths: "" is no output, "-" (CSV and JSON
// only) is standard output. The plot's name must end in .png or .svg. On an error,
// which is an *OutputError naming the output, nothing is left open.
func OpenOutputs(csvPath, jsonPath, plotPath string) (*Outputs, error) {
	o := &Outputs{csvStdout: csvPath == "-", jsonStdout: jsonPath == "-"}
	if o.csvStdout && o.jsonStdout {
		return nil, &OutputError{"json", errors.New("- (stdout) is taken by --csv: write one of them to a file")}
	}
	if plotPath != "" {
		if _, err := PlotFormat(plotPath); err != nil {
			return nil, &OutputError{"plot", fmt.Errorf("%q is not a .png or .svg file name", plotPath)}
		}
	}
	for _, out := range []struct {
		name, path string
		file       **OutputFile
	}{{"csv", csvPath, &o.csv}, {"json", jsonPath, &o.json}, {"plot", plotPath, &o.plot}} {
		if out.path == "" || out.path == "-" && out.name != "plot" {
			continue
		}
		file, err := CreateOutput(out.path)
		if err != nil {
			o.Abort()
			return nil, &OutputError{out.name, err}
		}
		*out.file = file
	}
	return o, nil
}

// Abort removes the temporary files of the outputs not written, leaving the files at
// their paths as they were.
func (o *Outputs) Abort() {
	for _, f := range []*OutputFile{o.csv, o.json, o.plot} {
		if f != nil {
			f.Abort()
		}
	}
}

// asked reports whether any output was asked for.
func (o *Outputs) asked() bool {
	return o.csv != nil || o.json != nil || o.plot != nil || o.csvStdout || o.jsonStdout
}

// Write writes the outputs of one run: its histogram as CSV (Result.WriteCSV), the
// result as JSON, and its plot. stdout is where "-" outputs go.
func (o *Outputs) Write(stdout io.Writer, r *Result) error {
	if r == nil {
		return o.write(stdout, nil, nil, nil)
	}
	return o.write(stdout, []*Result{r}, r.WriteCSV, r)
}

// WriteRuns writes the outputs of several labelled runs: one CSV of every histogram
// with a label column (WriteCSVRuns), doc as the JSON (the runs with whatever the
// caller measured beside latency), and one plot with a series per run.
func (o *Outputs) WriteRuns(stdout io.Writer, results []*Result, doc any) error {
	return o.write(stdout, results, func(w io.Writer) error { return WriteCSVRuns(w, results) }, doc)
}

// write writes the outputs asked for. Without a result it fails if any was asked for
// (the run was interrupted before its first result); without a single latency sample
// there is no plot: the previous file, if any, is left as it was and write fails.
func (o *Outputs) write(stdout io.Writer, results []*Result, writeCSV func(io.Writer) error, doc any) error {
	if len(results) == 0 {
		if o.asked() {
			return errors.New("no results to write: interrupted before the first run ended")
		}
		return nil
	}
	writeJSON := func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(doc)
	}
	for _, out := range []struct {
		name   string
		file   *OutputFile
		stdout bool
		write  func(io.Writer) error
	}{{"csv", o.csv, o.csvStdout, writeCSV}, {"json", o.json, o.jsonStdout, writeJSON}} {
		var err error
		switch {
		case out.stdout:
			err = out.write(stdout)
		case out.file != nil:
			err = out.file.Commit(out.write)
		}
		if err != nil {
			return &OutputError{out.name, err}
		}
	}
	if o.plot == nil {
		return nil
	}
	format, err := PlotFormat(o.plot.Path())
	if err == nil {
		err = o.plot.Commit(func(w io.Writer) error { return WriteTitledPlotTo(w, format, o.Title, results) })
	}
	if errors.Is(err, ErrNoSamples) {
		err = fmt.Errorf("%s not written: no probe came back, so there is no latency to plot: %w", o.plot.Path(), err)
	}
	if err != nil {
		return &OutputError{"plot", err}
	}
	return nil
}

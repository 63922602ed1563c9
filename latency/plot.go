package latency

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// plotBins is the number of logarithmic latency bins in the histogram panel.
const plotBins = 60

// ErrNoSamples is returned by the plot writers when no result has a latency sample.
var ErrNoSamples = errors.New("no samples to plot")

// WritePlot draws the latency histogram and CDF of results (one series per result, named
// by its label) side by side into path, a .png or .svg file. Without a single sample it
// returns ErrNoSamples and writes nothing; the file is replaced only once complete (see
// OutputFile).
func WritePlot(path string, results []*Result) error {
	format, err := PlotFormat(path)
	if err != nil {
		return err
	}
	if !hasSamples(results) {
		return fmt.Errorf("plot %s: %w", path, ErrNoSamples)
	}
	out, err := CreateOutput(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := out.Commit(func(w io.Writer) error { return WritePlotTo(w, format, results) }); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// PlotFormat returns "png" or "svg" from a plot file's name.
func PlotFormat(path string) (string, error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "png" && format != "svg" {
		return "", fmt.Errorf("plot %s: want a .png or .svg file name", path)
	}
	return format, nil
}

// hasSamples reports whether any result has a latency sample.
func hasSamples(results []*Result) bool {
	for _, r := range results {
		if len(buckets(r.Hist)) > 0 {
			return true
		}
	}
	return false
}

// WritePlotTo is WritePlot to a writer; format is "png" or "svg".
func WritePlotTo(w io.Writer, format string, results []*Result) error {
	return WriteTitledPlotTo(w, format, "", results)
}

// WriteTitledPlotTo is WritePlotTo with title (what was measured: the NIC, the traffic,
// the duration) above each panel's own title; "" is none.
func WriteTitledPlotTo(w io.Writer, format, title string, results []*Result) error {
	hist, cdf, err := plots(results)
	if err != nil {
		return err
	}
	width, height := 12*vg.Inch, 4.5*vg.Inch
	var canvas vg.CanvasWriterTo
	switch format {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(width, height)}
	case "svg":
		canvas = vgsvg.New(width, height)
	default:
		return fmt.Errorf("plot format %q is not png or svg", format)
	}
	if title != "" {
		hist.Title.Text = title + "\n" + hist.Title.Text
		cdf.Title.Text = title + "\n" + cdf.Title.Text
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 8, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	cs := plot.Align([][]*plot.Plot{{hist, cdf}}, tiles, dc)
	hist.Draw(cs[0][0])
	cdf.Draw(cs[0][1])
	_, err = canvas.WriteTo(w)
	return err
}

// plots builds the histogram and CDF panels.
func plots(results []*Result) (hist, cdf *plot.Plot, err error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range results {
		for _, b := range buckets(r.Hist) {
			v := us(b.value)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return nil, nil, ErrNoSamples
	}
	if hi <= lo {
		hi = lo * 1.01
	}
	hist, cdf = plot.New(), plot.New()
	hist.Title.Text = "Latency histogram"
	hist.X.Label.Text = "latency (µs)"
	hist.Y.Label.Text = "fraction of samples"
	cdf.Title.Text = "Latency CDF"
	cdf.X.Label.Text = "latency (µs)"
	cdf.Y.Label.Text = "fraction ≤ latency"
	for _, p := range []*plot.Plot{hist, cdf} {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
	}
	cdf.Legend.Left = true
	cdf.Y.Min, cdf.Y.Max = 0, 1

	ratio := math.Pow(hi/lo, 1.0/plotBins)
	for i, r := range results {
		bs := buckets(r.Hist)
		if len(bs) == 0 {
			continue
		}
		var total float64
		for _, b := range bs {
			total += float64(b.count)
		}
		bins := make([]float64, plotBins)
		for _, b := range bs {
			k := int(math.Log(us(b.value)/lo) / math.Log(ratio))
			bins[min(max(k, 0), plotBins-1)] += float64(b.count) / total
		}
		hxy := make(plotter.XYs, 0, plotBins+1)
		for k, f := range bins {
			hxy = append(hxy, plotter.XY{X: lo * math.Pow(ratio, float64(k)), Y: f})
		}
		hxy = append(hxy, plotter.XY{X: hi, Y: 0})
		cxy := make(plotter.XYs, 0, len(bs))
		var cum float64
		for _, b := range bs {
			cum += float64(b.count)
			cxy = append(cxy, plotter.XY{X: us(b.value), Y: cum / total})
		}
		name := r.Label
		if name == "" {
			name = fmt.Sprintf("run %d", i+1)
		}
		hl, err := plotter.NewLine(hxy)
		if err != nil {
			return nil, nil, err
		}
		hl.StepStyle = plotter.PostStep
		cl, err := plotter.NewLine(cxy)
		if err != nil {
			return nil, nil, err
		}
		cl.StepStyle = plotter.PostStep
		for _, l := range []*plotter.Line{hl, cl} {
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / 7)
			l.Width = vg.Points(1.5)
		}
		hist.Add(hl)
		cdf.Add(cl)
		hist.Legend.Add(name, hl)
		cdf.Legend.Add(name, cl)
	}
	return hist, cdf, nil
}

// us converts ns to µs for the plot, keeping it positive for the log scale.
func us(ns int64) float64 { return math.Max(float64(ns), 1) / 1e3 }

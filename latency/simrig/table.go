package simrig

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/uiod/uiod/latency"
)

// MinCPUWindow is the shortest poll-thread wall time a CPU share is given for: the
// dataplane samples a thread's CPU time about every 10 ms, so over less than ten samples
// the share is mostly sampling error and the table says n/a.
const MinCPUWindow = 100 * time.Millisecond

// CPUMeasured reports whether the run was long enough to measure the poll thread's CPU
// share (CPU is then its share; otherwise CPU is 0 and the table shows n/a).
func (r Row) CPUMeasured() bool { return r.CPUWindow >= MinCPUWindow }

// WriteTable prints the rows as one table of poll-thread CPU against latency, one unit
// per column: CPU in percent of one CPU, latencies in µs, the rest counts. A figure that
// could not be measured (a run too short for CPU, no probe back for latency) is n/a.
//
// When a row was also measured on device clocks (Options.HWStamps), the table has three
// more columns beside the software ones: that run's p50 and p99 on the device clocks,
// and the clock error they carry; n/a where a row has none.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	dev := false
	for _, r := range rows {
		dev = dev || r.Result.DeviceClock != nil
	}
	head := "policy\tCPU%\t" + latency.LatencyHeading
	if dev {
		head += latency.DeviceHeading
	}
	fmt.Fprintln(tw, head+"wakeups\tpredicted\tsleeps\tlost\t")
	for _, r := range rows {
		pred := "-"
		if r.Predicted > 0 {
			pred = fmt.Sprintf("%d/%d", r.Caught, r.Predicted)
		}
		cpu := "n/a"
		if r.CPUMeasured() {
			cpu = strconv.FormatFloat(r.CPU, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", r.Policy, cpu, latency.LatencyCells(r.Result))
		if dev {
			fmt.Fprint(tw, latency.DeviceCells(r.Result))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t\n", r.Wakeups, pred, r.Sleeps, r.Result.Lost+r.Result.Late)
	}
	return tw.Flush()
}

// rowJSON is a Row's JSON form; cpu_percent is null when the run was too short to
// measure it.
type rowJSON struct {
	Policy     string          `json:"policy"`
	CPUPercent *float64        `json:"cpu_percent"`
	CPUWindow  float64         `json:"cpu_window_seconds"`
	Wakeups    uint64          `json:"wakeups"`
	Predicted  uint64          `json:"wakeups_predicted"`
	Caught     uint64          `json:"predicted_caught"`
	Sleeps     uint64          `json:"sleeps"`
	Latency    *latency.Result `json:"latency"`
}

// MarshalJSON encodes the row with its CPU share, wake-ups and latency result.
func (r Row) MarshalJSON() ([]byte, error) {
	j := rowJSON{r.Policy, nil, r.CPUWindow.Seconds(), r.Wakeups, r.Predicted, r.Caught, r.Sleeps, r.Result}
	if r.CPUMeasured() {
		j.CPUPercent = &r.CPU
	}
	return json.Marshal(j)
}

package simrig

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/uiod/uiod/latency"
)

// WriteTable prints the rows as the KNI seed's CPU-vs-latency table.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tCPU %\tp50\tp99\tmax\twakeups\tpredicted\tsleeps\tlost\t")
	for _, r := range rows {
		s := r.Result.Summary()
		pred := "-"
		if r.Predicted > 0 {
			pred = fmt.Sprintf("%d/%d", r.Caught, r.Predicted)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t\n", r.Policy, r.CPU,
			latency.FormatNs(s.Median), latency.FormatNs(s.P99), latency.FormatNs(s.Max), r.Wakeups, pred, r.Sleeps, r.Result.Lost+r.Result.Late)
	}
	return tw.Flush()
}

// rowJSON is a Row's JSON form.
type rowJSON struct {
	Policy     string          `json:"policy"`
	CPUPercent float64         `json:"cpu_percent"`
	Wakeups    uint64          `json:"wakeups"`
	Predicted  uint64          `json:"wakeups_predicted"`
	Caught     uint64          `json:"predicted_caught"`
	Sleeps     uint64          `json:"sleeps"`
	Latency    *latency.Result `json:"latency"`
}

// MarshalJSON encodes the row with its CPU share, wake-ups and latency result.
func (r Row) MarshalJSON() ([]byte, error) {
	return json.Marshal(rowJSON{r.Policy, r.CPU, r.Wakeups, r.Predicted, r.Caught, r.Sleeps, r.Result})
}

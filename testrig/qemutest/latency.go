package qemutest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LatencyReport is the part of `uiod latency --json` that the tests read.
type LatencyReport struct {
	Sent       uint64  `json:"sent"`
	SendErrors uint64  `json:"send_errors"`
	Received   uint64  `json:"received"`
	Late       uint64  `json:"late"`
	Lost       uint64  `json:"lost"`
	Duplicates uint64  `json:"duplicates"`
	Foreign    uint64  `json:"foreign"`
	Samples    uint64  `json:"samples"`
	AverageNs  float64 `json:"average_ns"`
	MinNs      int64   `json:"min_ns"`
	MedianNs   int64   `json:"median_ns"`
	P99Ns      int64   `json:"p99_ns"`
	MaxNs      int64   `json:"max_ns"`
}

// Latency runs `uiod latency` on the host with the uiod binary bin: probes go into tx's
// wire and come back from rx's, with the flags args (--count, --interval, --timeout...)
// and --label label. It writes the --json report into dir and returns uiod's command line
// and standard output, and the report; a run that fails or outlasts timeout is an error
// carrying uiod's output.
func Latency(bin string, tx, rx NIC, dir, label string, timeout time.Duration, args ...string) (stdout string, report *LatencyReport, err error) {
	js := filepath.Join(dir, label+".json")
	argv := append([]string{"latency",
		"--tx", "unix:" + tx.HostSocket + "," + tx.GuestSocket,
		"--rx", "unix:" + rx.HostSocket + "," + rx.GuestSocket},
		args...)
	argv = append(argv, "--label", label, "--json", js)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("uiod %s: %w:\n%s%s", strings.Join(argv, " "), err, out.Bytes(), errOut.Bytes())
	}
	data, err := os.ReadFile(js)
	if err != nil {
		return "", nil, fmt.Errorf("uiod latency report: %w", err)
	}
	report = &LatencyReport{}
	if err := json.Unmarshal(data, report); err != nil {
		return "", nil, fmt.Errorf("uiod latency --json: %w:\n%s", err, data)
	}
	return "uiod " + strings.Join(argv, " ") + "\n" + strings.TrimSpace(out.String()), report, nil
}

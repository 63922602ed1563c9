package qemutest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Latency runs `uiod latency` on the host with the uiod binary bin: probes go into tx's
// wire and come back from rx's, with the flags args (--count, --interval, --timeout...)
// and --label label. It writes the --json report into dir and returns uiod's standard
// output and the report; a run that fails or outlasts timeout is an error carrying
// uiod's output.
func Latency(bin string, tx, rx NIC, dir, label string, timeout time.Duration, args ...string) (stdout string, report []byte, err error) {
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
	report, err = os.ReadFile(js)
	if err != nil {
		return "", nil, fmt.Errorf("uiod latency report: %w", err)
	}
	return "uiod " + strings.Join(argv, " ") + "\n" + strings.TrimSpace(out.String()), report, nil
}

package guest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// statusPort is one port of a daemon's /status, as far as the guest tests read it.
type statusPort struct {
	Name   string `json:"name"`
	LinkUp bool   `json:"link_up"`
	Stats  struct {
		RxPackets uint64 `json:"rx_packets"`
		TxPackets uint64 `json:"tx_packets"`
	} `json:"stats"`
}

func (p statusPort) String() string {
	return fmt.Sprintf("%s: link %v, rx %d, tx %d", p.Name, p.LinkUp, p.Stats.RxPackets, p.Stats.TxPackets)
}

// statusPorts reads the ports of the /status at url, each decoded as a P.
func statusPorts[P any](url string) ([]P, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Ports []P `json:"ports"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st.Ports, err
}

// portsReady reads the /status at url: whether it lists n ports and ready holds for each,
// and what it showed.
func portsReady(url string, n int, ready func(statusPort) bool) (bool, string) {
	ports, err := statusPorts[statusPort](url)
	if err != nil || len(ports) != n {
		return false, fmt.Sprintf("status: %v, %d ports", err, len(ports))
	}
	var s []string
	done := true
	for _, p := range ports {
		s = append(s, p.String())
		done = done && ready(p)
	}
	return done, strings.Join(s, "; ")
}

// waitPorts waits up to 90 s until the /status at url of the daemon run (logging to log)
// lists n ports and ready holds for each; it fails t, saying what the ports showed, if
// not.
func waitPorts(t *testing.T, run *exec.Cmd, log *syncBuffer, url string, n int, ready func(statusPort) bool) {
	t.Helper()
	var last string
	ok := testutil.WaitFor(90*time.Second, func() bool {
		done, showed := portsReady(url, n, ready)
		last = showed
		return done
	})
	if !ok {
		t.Fatalf("uiod run did not forward frames within 90s (%s):\n%s", last, log)
	}
	t.Logf("uiod run (pid %d) forwarding: %s", run.Process.Pid, last)
}

package dpdk

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

type run struct {
	name      string
	round     int
	kpps      float64 // the probes' rate
	lat       qemutest.LatencyReport
	probeCPU  float64 // process CPU % while probed
	idleCPU   float64 // process CPU % with no traffic
	probeIRQs uint64
	idleIRQs  uint64
	probeSecs float64
	// stalls and stallSecs are uiod's poll threads' stalls over the probes (idle.Stats:
	// empty polls over 20 µs late); hasStalls is false for the DPDK forwarders.
	stalls     float64
	stallSecs  float64
	hasStalls  bool
	latencyErr string
	// burst is the percentage of the burst's probes that came back: how much of a
	// 100 kpps burst the forwarder passes (QEMU's I/O thread bounds it too).
	burst float64
}

// measure has the guest start name, probes it from the host at st's rate, and reads the
// guest's counts. started is how many times name was started before (READY lines), seq
// how many runs were measured before.
func measure(t *testing.T, vm *qemutest.VM, name string, round, started, seq int, st rateStep, burst int) (run, error) {
	r := run{name: name, round: round + 1, kpps: st.kpps()}
	if err := vm.Send("start " + name); err != nil {
		return r, err
	}
	out, err := vm.WaitOutput("BENCH READY "+name, 4*time.Minute)
	if err != nil || countLines(out, "BENCH READY "+name) <= started {
		// WaitOutput matches any earlier run's line too: wait for this run's.
		deadline := time.Now().Add(4 * time.Minute)
		for err == nil && countLines(out, "BENCH READY "+name) <= started && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			out, err = vm.WaitOutput("BENCH READY "+name, time.Minute)
		}
		if err != nil {
			return r, fmt.Errorf("not ready: %v\n%s", err, qemutest.Tail(out, 30))
		}
	}
	lat, err := probe(t, vm, name, st.probes, st.gap)
	if err != nil {
		r.latencyErr = err.Error()
		t.Logf("%s round %d: %v", name, round+1, err)
	} else {
		r.lat = *lat
	}
	if err := vm.Send("probed"); err != nil {
		return r, err
	}
	want := seq + 1 // RESULT lines so far, this one included
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ = vm.WaitOutput("BENCH RESULT", time.Minute)
		lines := grepPrefix(out, "BENCH RESULT ")
		if len(lines) >= want {
			if r, err = parseResult(r, lines[want-1]); err != nil {
				return r, err
			}
			return r, burstAndStop(t, vm, &r, burst)
		}
		if strings.Contains(out, "BENCH FAIL") || time.Now().After(deadline) {
			return r, fmt.Errorf("no result:\n%s", qemutest.Tail(out, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// burstAndStop sends the burst to the forwarder of r (after its idle stretch), records
// what came back and has the guest stop the forwarder.
func burstAndStop(t *testing.T, vm *qemutest.VM, r *run, burst int) error {
	if burst > 0 {
		lat, err := probe(t, vm, r.name+"-burst", burst, *burstGap)
		if err != nil {
			t.Logf("%s round %d burst: %v", r.name, r.round, err)
		} else {
			r.burst = 100 * float64(lat.Received) / float64(max(lat.Sent, 1))
		}
	}
	want := countLines(output(vm), "BENCH STOPPED "+r.name) + 1
	if err := vm.Send("stop"); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for countLines(output(vm), "BENCH STOPPED "+r.name) < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not stopped:\n%s", r.name, qemutest.Tail(output(vm), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// output is the guest script's output so far.
func output(vm *qemutest.VM) string {
	out, _ := vm.WaitOutput("", time.Second) // every output contains ""
	return out
}

// hostBin is the uiod binary the host probes with: the guest's static one.
var hostBin string

// probeDst is the probes' destination MAC: NIC 0's own (a router, l3fwd, routes only
// frames to its port's MAC), or with VFs the MAC guest.sh has NIC 0's PF give VF 0 (the
// PF's switch delivers to the VF only frames to that MAC). measureSteps sets it.
var probeDst string

// vfProbeMAC is the MAC guest.sh gives VF 0 of NIC 0 (its vf call for NIC1).
const vfProbeMAC = "02:75:69:6f:64:02"

// probe sends count probes gap apart into NIC 0's wire and receives them from NIC 1's.
func probe(t *testing.T, vm *qemutest.VM, name string, count int, gap time.Duration) (*qemutest.LatencyReport, error) {
	_, rep, err := qemutest.Latency(hostBin, vm.NICs[0], vm.NICs[1], t.TempDir(), name, 5*time.Minute,
		"--count", strconv.Itoa(count), "--interval", gap.String(), "--timeout", "1s",
		"--dst-mac", probeDst)
	return rep, err
}

// parseResult fills r from a "BENCH RESULT name k=v ..." line.
func parseResult(r run, line string) (run, error) {
	f := strings.Fields(line)
	if len(f) < 3 || f[2] != r.name {
		return r, fmt.Errorf("result line %q is not %s's", line, r.name)
	}
	kv := map[string]float64{}
	for _, w := range f[3:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return r, fmt.Errorf("result %q: %s: %v", line, k, err)
		}
		kv[k] = x
	}
	if kv["probe_s"] <= 0 || kv["idle_s"] <= 0 {
		return r, fmt.Errorf("result %q has no durations", line)
	}
	// USER_HZ is 100 on x86 Linux: a tick is 10 ms.
	r.probeSecs = kv["probe_s"]
	r.probeCPU = kv["probe_ticks"] / kv["probe_s"]
	r.idleCPU = kv["idle_ticks"] / kv["idle_s"]
	r.probeIRQs = uint64(kv["probe_irqs"])
	r.idleIRQs = uint64(kv["idle_irqs"])
	if n, ok := kv["probe_stalls"]; ok {
		r.stalls, r.stallSecs, r.hasStalls = n, kv["probe_stall_s"], true
	}
	return r, nil
}

// countLines is how many complete lines of s are line exactly: "BENCH READY uiod-busy"
// must not count uiod-busy-noyield's.
func countLines(s, line string) int {
	n := 0
	for _, l := range grepPrefix(s, line) {
		if strings.TrimRight(l, "\r") == line {
			n++
		}
	}
	return n
}

// grepPrefix returns the complete lines of s (a line still being written, without its
// newline, does not count) that start with prefix.
func grepPrefix(s, prefix string) []string {
	var out []string
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		s = ""
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestGrepPrefix checks that a line the guest is still writing (no newline yet) is not
// taken for a result.
func TestGrepPrefix(t *testing.T) {
	tests := []struct {
		out  string
		want []string
	}{
		{"", nil},
		{"BENCH RESULT a x=1", nil},
		{"BENCH RESULT a x=1\n", []string{"BENCH RESULT a x=1"}},
		{"BENCH RESULT a x=1\nBENCH RESULT uio", []string{"BENCH RESULT a x=1"}},
		{"noise\nBENCH RESULT a x=1\nBENCH RESULT b y=2\nmore\n", []string{"BENCH RESULT a x=1", "BENCH RESULT b y=2"}},
	}
	for _, tt := range tests {
		if got := grepPrefix(tt.out, "BENCH RESULT "); !slices.Equal(got, tt.want) {
			t.Errorf("grepPrefix(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

// A forwarder's READY and STOPPED lines are counted whole: uiod-busy's count is not
// raised by uiod-busy-noyield's, whose name it prefixes.
func TestCountLines(t *testing.T) {
	out := "BENCH READY uiod-busy\nBENCH READY uiod-busy-noyield\r\nBENCH READY uiod-busy-noyield\nBENCH READY uiod-busy"
	for _, tc := range []struct {
		line string
		want int
	}{
		{"BENCH READY uiod-busy", 1}, // the last line is not complete yet
		{"BENCH READY uiod-busy-noyield", 2},
		{"BENCH READY uiod", 0},
	} {
		if got := countLines(out, tc.line); got != tc.want {
			t.Errorf("%q: %d lines, want %d", tc.line, got, tc.want)
		}
	}
}

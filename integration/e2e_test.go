package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// The end-to-end test. The guest (testdata/e2e.sh) binds NIC 1 to vfio-pci and NIC 2 to
// uio_pci_generic with `uiod bind` and runs `uiod run`: igb on both, MSI-X on the vfio port,
// INTx on the uio port, l2fwd between them, adaptive idle policy. The host sends probes with
// `uiod latency` into one NIC's wire and expects them back from the other's, both ways, then
// tells the guest to stop: it prints the daemon's /status, SIGTERMs it, and gives the NICs
// back to igb with `uiod unbind --restore`. The host checks everything the guest printed.

const (
	// e2eProbes probes at e2eInterval go each way: slow enough for TCG to forward every
	// one, far enough apart that the poll thread goes to sleep between them.
	e2eProbes   = 200
	e2eInterval = 5 * time.Millisecond
	// e2eProbeTimeout is how long a probe may take through TCG before it counts as late.
	e2eProbeTimeout = time.Second
	// e2eHugePages are enough for both ports' rings and mempools (uio needs them
	// physically contiguous) with room to spare.
	e2eHugePages = 32
)

// TestIntegrationE2EDebianIOMMU runs the end-to-end test on Debian's kernel with an emulated
// Intel IOMMU: the vfio port through vfio type1.
func TestIntegrationE2EDebianIOMMU(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, IOMMU: true})
}

// TestIntegrationE2ESharedIOMMU runs the end-to-end test on the shared kernel (drivers built
// in) with an emulated Intel IOMMU.
func TestIntegrationE2ESharedIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, IOMMU: true})
}

// TestIntegrationE2ESharedNoIOMMU runs the end-to-end test on the shared kernel without an
// IOMMU, the vfio port in vfio's unsafe no-IOMMU mode.
func TestIntegrationE2ESharedNoIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, UnsafeNoIOMMU: true})
}

// runE2E boots a guest with o running testdata/e2e.sh, drives probes through it both ways
// and checks what the guest reports.
func runE2E(t *testing.T, o qemutest.Options) {
	qemutest.Require(t)
	script, err := os.ReadFile(filepath.Join("testdata", "e2e.sh"))
	if err != nil {
		t.Fatal(err)
	}
	o.Files = append(o.Files, guestFiles(t)...)
	o.Script = string(script)
	o.HugePages = e2eHugePages
	o.Timeout = 5 * time.Minute
	vm := qemutest.Start(t, o)

	// The host's uiod is the guest's static binary.
	host := binaries.uiod
	var runs []*latencyRun
	if _, err := vm.WaitOutput("E2E READY", 4*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else {
		nic1, nic2 := vm.NICs[0], vm.NICs[1]
		for _, d := range []struct {
			name   string
			tx, rx qemutest.NIC
		}{
			{"nic1-to-nic2", nic1, nic2},
			{"nic2-to-nic1", nic2, nic1},
		} {
			r, err := runLatency(t, host, d.name, d.tx, d.rx)
			if err != nil {
				t.Errorf("uiod latency %s: %v", d.name, err)
				continue
			}
			runs = append(runs, r)
		}
		if err := vm.Send("done"); err != nil {
			t.Errorf("tell the guest to stop: %v", err)
		}
	}
	res, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: boot %v, e2e script %v, QEMU start to power-off %v", res.Kernel,
		res.Boot.Round(time.Millisecond), res.Script.Round(time.Millisecond), res.Wall.Round(time.Millisecond))

	rep := parseE2E(res.Output)
	defer func() {
		if t.Failed() {
			t.Logf("guest output:\n%s", res.Output)
			t.Logf("guest console:\n%s", res.Console)
		}
	}()
	if res.Exit != 0 {
		t.Fatalf("guest script exit status %d: %s", res.Exit, strings.Join(rep.fails, "; "))
	}
	checkProbes(t, runs)
	checkStatus(t, rep)
	checkInterrupts(t, rep, res.NICs)
	checkShutdown(t, rep, res.NICs)
}

// latencyRun is one direction's `uiod latency --json` result, as far as the test reads it.
type latencyRun struct {
	Name       string  `json:"-"`
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

// runLatency sends the probes into tx's wire and receives them from rx's with the host's
// uiod binary at bin.
func runLatency(t *testing.T, bin, name string, tx, rx qemutest.NIC) (*latencyRun, error) {
	out := filepath.Join(t.TempDir(), name+".json")
	args := []string{"latency",
		"--tx", "unix:" + tx.HostSocket + "," + tx.GuestSocket,
		"--rx", "unix:" + rx.HostSocket + "," + rx.GuestSocket,
		"--count", strconv.Itoa(e2eProbes), "--interval", e2eInterval.String(),
		"--timeout", e2eProbeTimeout.String(), "--label", name, "--json", out}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w:\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("uiod %s\n%s", strings.Join(args, " "), strings.TrimSpace(stdout.String()))
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	r := &latencyRun{Name: name}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("--json output: %w:\n%s", err, data)
	}
	return r, nil
}

// checkProbes checks that both directions forwarded every probe in time.
func checkProbes(t *testing.T, runs []*latencyRun) {
	t.Helper()
	if len(runs) != 2 {
		t.Errorf("%d probe runs completed, want both directions", len(runs))
	}
	for _, r := range runs {
		t.Logf("%s: sent %d, received %d, late %d, lost %d; latency min %v, median %v, mean %v, p99 %v, max %v",
			r.Name, r.Sent, r.Received, r.Late, r.Lost, time.Duration(r.MinNs), time.Duration(r.MedianNs),
			time.Duration(r.AverageNs).Round(time.Microsecond), time.Duration(r.P99Ns), time.Duration(r.MaxNs))
		if r.Sent != e2eProbes || r.SendErrors != 0 {
			t.Errorf("%s: sent %d probes with %d send errors, want %d and none", r.Name, r.Sent, r.SendErrors, e2eProbes)
		}
		if r.Received != r.Sent || r.Lost != 0 || r.Late != 0 || r.Duplicates != 0 {
			t.Errorf("%s: %d of %d probes came back in time (late %d, lost %d, duplicates %d), want all exactly once",
				r.Name, r.Received, r.Sent, r.Late, r.Lost, r.Duplicates)
		}
	}
}

// e2eReport is what the guest script printed on its "E2E " lines.
type e2eReport struct {
	fails   []string         // "FAIL ..." lines
	irqs    map[string][]irq // "before" and "after" /proc/interrupts lines
	status  []byte           // the daemon's /status JSON after the probes
	devices []byte           // `uiod devices --json` after the restore
	log     []string         // the daemon's log
	runExit int              // uiod run's exit status after SIGTERM; -1 when not reported
}

// irq is one /proc/interrupts line: the interrupt, its count summed over the CPUs, and
// the rest of the line (chip, type and the handlers' names).
type irq struct {
	num   string
	count uint64
	desc  string
}

// parseIRQLine parses a /proc/interrupts line such as
// " 24:   17   IR-PCI-MSIX-0000:01:00.0   0-edge   vfio-msix[0](0000:01:00.0)".
func parseIRQLine(line string) (irq, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
		return irq{}, false
	}
	q := irq{num: strings.TrimSuffix(f[0], ":")}
	i := 1
	for ; i < len(f); i++ {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			break
		}
		q.count += n
	}
	if i == 1 {
		return irq{}, false
	}
	q.desc = strings.Join(f[i:], " ")
	return q, true
}

// parseE2E reads the guest script's output.
func parseE2E(out string) *e2eReport {
	rep := &e2eReport{irqs: map[string][]irq{}, runExit: -1}
	var section *[]byte
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		rest, ok := strings.CutPrefix(line, "E2E ")
		if !ok {
			if section != nil {
				*section = append(*section, line+"\n"...)
			}
			continue
		}
		word, args, _ := strings.Cut(rest, " ")
		switch {
		case word == "FAIL":
			rep.fails = append(rep.fails, args)
		case word == "irq":
			when, l, _ := strings.Cut(args, " ")
			if q, ok := parseIRQLine(l); ok {
				rep.irqs[when] = append(rep.irqs[when], q)
			}
		case word == "STATUS-BEGIN":
			section = &rep.status
		case word == "DEVICES-BEGIN":
			section = &rep.devices
		case word == "STATUS-END" || word == "DEVICES-END":
			section = nil
		case word == "log":
			rep.log = append(rep.log, args)
		case strings.HasPrefix(word, "run-exit="):
			if n, err := strconv.Atoi(strings.TrimPrefix(word, "run-exit=")); err == nil {
				rep.runExit = n
			}
		}
	}
	return rep
}

// e2eStatus is the part of the daemon's /status the test reads.
type e2eStatus struct {
	Ports []struct {
		Name   string `json:"name"`
		LinkUp bool   `json:"link_up"`
		Stats  struct {
			RxPackets uint64 `json:"rx_packets"`
			TxPackets uint64 `json:"tx_packets"`
			RxMissed  uint64 `json:"rx_missed"`
		} `json:"stats"`
	} `json:"ports"`
	Queues []struct {
		Name      string `json:"name"`
		RxPackets uint64 `json:"rx_packets"`
		TxPackets uint64 `json:"tx_packets"`
		Drops     uint64 `json:"drops"`
	} `json:"queues"`
	Threads []struct {
		Index         int     `json:"index"`
		Arms          uint64  `json:"arms"`
		Sleeps        uint64  `json:"sleeps"`
		WakeInterrupt uint64  `json:"wakeups_interrupt"`
		WakeTimeout   uint64  `json:"wakeups_timeout"`
		WakeSpurious  uint64  `json:"wakeups_spurious"`
		AsleepSeconds float64 `json:"asleep_seconds"`
		CPUPercent    float64 `json:"cpu_percent"`
	} `json:"threads"`
}

// checkStatus checks the daemon's counters: both ports forwarded the probes, and the poll
// thread slept and was woken by interrupts.
func checkStatus(t *testing.T, rep *e2eReport) {
	t.Helper()
	var st e2eStatus
	if err := json.Unmarshal(rep.status, &st); err != nil {
		t.Errorf("daemon /status: %v:\n%s", err, rep.status)
		return
	}
	if len(st.Ports) != 2 || len(st.Threads) != 1 {
		t.Errorf("daemon /status has %d ports and %d poll threads, want 2 and 1:\n%s", len(st.Ports), len(st.Threads), rep.status)
		return
	}
	for _, p := range st.Ports {
		t.Logf("port %s: link up %v, rx %d, tx %d, missed %d", p.Name, p.LinkUp, p.Stats.RxPackets, p.Stats.TxPackets, p.Stats.RxMissed)
		// Each port receives one direction's probes and sends the other's.
		if p.Stats.RxPackets < e2eProbes || p.Stats.TxPackets < e2eProbes {
			t.Errorf("port %s received %d and sent %d frames, want at least %d each", p.Name, p.Stats.RxPackets, p.Stats.TxPackets, e2eProbes)
		}
	}
	for _, q := range st.Queues {
		if q.RxPackets < e2eProbes || q.Drops != 0 {
			t.Errorf("queue %s took %d frames and dropped %d, want at least %d and none", q.Name, q.RxPackets, q.Drops, e2eProbes)
		}
	}
	th := st.Threads[0]
	t.Logf("poll thread: arms %d, sleeps %d, wake-ups by interrupt %d (spurious %d), by timeout %d; asleep %.2fs, CPU %.1f%%",
		th.Arms, th.Sleeps, th.WakeInterrupt, th.WakeSpurious, th.WakeTimeout, th.AsleepSeconds, th.CPUPercent)
	if th.Sleeps == 0 || th.WakeInterrupt == 0 {
		t.Errorf("poll thread slept %d times and was woken by an interrupt %d times, want both > 0", th.Sleeps, th.WakeInterrupt)
	}
	// Each probe arrives 5 ms after the last, long past the 300 µs idle threshold, so most
	// of them must find the thread asleep and wake it (TCG may stretch a few gaps).
	if want := uint64(e2eProbes); th.WakeInterrupt-th.WakeSpurious < want {
		t.Errorf("poll thread woke for frames %d times (interrupt %d − spurious %d), want at least %d of the %d probes",
			th.WakeInterrupt-th.WakeSpurious, th.WakeInterrupt, th.WakeSpurious, want, 2*e2eProbes)
	}
}

// checkInterrupts checks, from the guest kernel's /proc/interrupts before and after the
// probes, that the vfio port's MSI-X vectors and the uio port's INTx line both fired: the
// kernel delivered each port's interrupts, which only the sleeping poll thread enables.
func checkInterrupts(t *testing.T, rep *e2eReport, nics []string) {
	t.Helper()
	if len(nics) < 2 {
		t.Errorf("guest NICs %q, want two", nics)
		return
	}
	delta := func(match func(desc string) bool) (uint64, bool) {
		before := map[string]uint64{}
		for _, q := range rep.irqs["before"] {
			before[q.num] = q.count
		}
		var d uint64
		found := false
		for _, q := range rep.irqs["after"] {
			if match(q.desc) {
				d += q.count - before[q.num]
				found = true
			}
		}
		return d, found
	}
	msix, ok := delta(func(desc string) bool {
		return strings.Contains(desc, "vfio-msix") && strings.Contains(desc, nics[0])
	})
	if !ok {
		t.Errorf("guest /proc/interrupts has no vfio-msix vector of %s: %+v", nics[0], rep.irqs["after"])
	}
	intx, ok := delta(func(desc string) bool { return strings.Contains(desc, "uio_pci_generic") })
	if !ok {
		t.Errorf("guest /proc/interrupts has no uio_pci_generic interrupt: %+v", rep.irqs["after"])
	}
	t.Logf("interrupts during the probes: %s MSI-X (vfio-pci) %d, %s INTx (uio_pci_generic) %d", nics[0], msix, nics[1], intx)
	// Each port receives e2eProbes probes, most of them while the thread sleeps.
	for _, c := range []struct {
		what string
		n    uint64
	}{{"MSI-X of " + nics[0], msix}, {"INTx of " + nics[1], intx}} {
		if c.n < e2eProbes/2 {
			t.Errorf("%s fired %d times during the probes, want at least %d of the %d frames it received", c.what, c.n, e2eProbes/2, e2eProbes)
		}
	}
}

// checkShutdown checks that SIGTERM stopped the daemon cleanly and that the NICs went back
// to igb.
func checkShutdown(t *testing.T, rep *e2eReport, nics []string) {
	t.Helper()
	if rep.runExit != 0 {
		t.Errorf("uiod run exited with status %d after SIGTERM, want 0", rep.runExit)
	}
	var clean bool
	for _, l := range rep.log {
		if strings.Contains(l, "stopped cleanly") {
			clean = true
		}
	}
	if !clean {
		t.Errorf("uiod run's log lacks \"stopped cleanly\":\n%s", strings.Join(rep.log, "\n"))
	}
	var devs []struct {
		Address string `json:"address"`
		Driver  string `json:"driver"`
	}
	if err := json.Unmarshal(rep.devices, &devs); err != nil {
		t.Errorf("uiod devices --json after the restore: %v:\n%s", err, rep.devices)
		return
	}
	drivers := map[string]string{}
	for _, d := range devs {
		drivers[d.Address] = d.Driver
	}
	for _, a := range nics[:min(2, len(nics))] {
		if drivers[a] != "igb" {
			t.Errorf("after uiod unbind --restore %s is on driver %q, want igb", a, drivers[a])
		}
	}
}

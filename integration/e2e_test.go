package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// back to their drivers with `uiod unbind --restore`. The host checks everything the guest
// printed. With more NIC models (runE2EModels), each model's pair of NICs is set up the same
// way and forwarded by the same daemon and poll thread, and probed in turn.

const (
	// e2eProbes probes at e2eInterval go each way: slow enough for TCG to forward every
	// one, far enough apart that the poll thread goes to sleep between them.
	e2eProbes   = 200
	e2eInterval = 5 * time.Millisecond
	// e2eProbeTimeout is how long a probe may take through TCG before it counts as late,
	// and how long the host waits for stragglers after the last one. A late probe was
	// still forwarded: the test reports late probes, it does not fail on them.
	e2eProbeTimeout = 10 * time.Second
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
	runE2E(t, qemutest.Options{Kernel: k, IOMMU: true}, "")
}

// TestIntegrationE2ESharedIOMMU runs the end-to-end test on the shared kernel (drivers built
// in) with an emulated Intel IOMMU.
func TestIntegrationE2ESharedIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, IOMMU: true}, "")
}

// TestIntegrationE2ESharedIOMMUFD runs the end-to-end test on the shared kernel with the
// vfio port opened through the device cdev and iommufd (vfio.interface: iommufd) instead of
// the container/group interface.
func TestIntegrationE2ESharedIOMMUFD(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, IOMMU: true}, "iommufd")
}

// TestIntegrationE2ESharedNoIOMMU runs the end-to-end test on the shared kernel without an
// IOMMU, the vfio port in vfio's unsafe no-IOMMU mode.
func TestIntegrationE2ESharedNoIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2E(t, qemutest.Options{Kernel: k, UnsafeNoIOMMU: true}, "")
}

// TestIntegrationE2EVirtio runs the end-to-end test on Debian's kernel with an emulated
// Intel IOMMU and four NICs: NICs 1 and 2 igb, NICs 3 and 4 modern virtio-net
// (qemutest.VirtioNICArgs: disable-legacy=on,mq=on,vectors=4,iommu_platform=on, each behind
// its own pcie-root-port, dgram netdevs). One `uiod run` forwards igb p0 (vfio-pci, MSI-X)
// ↔ p1 (uio_pci_generic, INTx) and virtio p2 (vfio-pci, MSI-X) ↔ p3 (uio_pci_generic,
// INTx) on one adaptive poll thread; the host probes each pair both ways in turn, so the
// latencies of the two NIC models are measured in the same guest by the same daemon.
func TestIntegrationE2EVirtio(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	runE2EModels(t, qemutest.Options{Kernel: k, IOMMU: true}, "", []string{"igb", "virtio"})
}

// direction is one run of probes: into the wire of NIC in, back out of NIC out.
type direction struct {
	name    string
	model   string
	in, out int // indexes into the NICs and the daemon's ports: even ones vfio-pci, odd ones uio
}

// e2eDirections are the runs of probes, in order: for each model's pair of NICs (2k, 2k+1)
// in, and back, out.
func e2eDirections(models []string) []direction {
	var ds []direction
	for k, m := range models {
		a, b := 2*k, 2*k+1
		ds = append(ds,
			direction{fmt.Sprintf("%s-nic%d-to-nic%d", m, a+1, b+1), m, a, b},
			direction{fmt.Sprintf("%s-nic%d-to-nic%d", m, b+1, a+1), m, b, a})
	}
	return ds
}

// runE2E boots a guest with o and two igb NICs running testdata/e2e.sh, drives probes
// through it both ways and checks what the guest reports. vfioInterface, if set, is the
// daemon's vfio.interface (through its UIOD_VFIO_INTERFACE override); the guest checks the
// daemon used it.
func runE2E(t *testing.T, o qemutest.Options, vfioInterface string) {
	runE2EModels(t, o, vfioInterface, []string{"igb"})
}

// runE2EModels is runE2E with a pair of NICs of each model ("igb", "virtio"), all
// forwarded by one daemon.
func runE2EModels(t *testing.T, o qemutest.Options, vfioInterface string, models []string) {
	qemutest.Require(t)
	script, err := os.ReadFile(filepath.Join("testdata", "e2e.sh"))
	if err != nil {
		t.Fatal(err)
	}
	o.NICs = 2 * len(models)
	o.NICModels = nil
	for _, m := range models {
		o.NICModels = append(o.NICModels, m, m)
	}
	o.Files = append(o.Files, guestFiles(t)...)
	o.Script = "export UIOD_E2E_MODELS='" + strings.Join(models, " ") + "'\n" + string(script)
	if vfioInterface != "" {
		o.Script = "export UIOD_VFIO_INTERFACE=" + vfioInterface + "\n" + o.Script
	}
	directions := e2eDirections(models)
	o.HugePages = e2eHugePages
	o.Timeout = 5 * time.Minute
	vm := qemutest.Start(t, o)

	// The host's uiod is the guest's static binary. After each run of probes the guest
	// takes a snapshot of the interrupt counts and the daemon's /status, named after it.
	host := binaries.uiod
	runs := map[string]*latencyRun{}
	if _, err := vm.WaitOutput("E2E READY", 4*time.Minute); err != nil {
		t.Errorf("guest not ready: %v", err)
	} else {
		for _, d := range directions {
			r, err := runLatency(t, host, d.name, vm.NICs[d.in], vm.NICs[d.out])
			if err != nil {
				t.Errorf("uiod latency %s: %v", d.name, err)
				break
			}
			runs[d.name] = r
			if err := vm.Send(d.name); err != nil {
				t.Errorf("guest control port: %v", err)
				break
			}
			if _, err := vm.WaitOutput("E2E snapshot "+d.name+" taken", time.Minute); err != nil {
				t.Errorf("snapshot after %s: %v", d.name, err)
				break
			}
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
	defer func() {
		if t.Failed() {
			t.Logf("guest output:\n%s", res.Output)
			t.Logf("guest console:\n%s", res.Console)
		}
	}()
	rep := parseE2E(res.Output)
	if res.Exit != 0 {
		t.Fatalf("guest script exit status %d: %s", res.Exit, strings.Join(rep.fails, "; "))
	}
	if len(res.NICs) < o.NICs {
		t.Fatalf("guest NICs %q, want %d", res.NICs, o.NICs)
	}
	for i := 0; i < o.NICs; i++ {
		if !slices.ContainsFunc(rep.log, func(l string) bool {
			return strings.Contains(l, "nic driver") && strings.Contains(l, fmt.Sprintf(`"port": "p%d"`, i)) &&
				strings.Contains(l, fmt.Sprintf(`"nic": "%s"`, o.NICModels[i]))
		}) {
			t.Errorf("the daemon's log does not say port p%d was opened by the %s driver", i, o.NICModels[i])
		}
	}
	if vfioInterface != "" && !strings.Contains(res.Output, "E2E vfio interface "+vfioInterface) {
		t.Errorf("guest did not confirm the vfio port was opened through %s", vfioInterface)
	}
	prev := "start"
	for _, d := range directions {
		t.Run(d.name, func(t *testing.T) {
			r := runs[d.name]
			if r == nil {
				t.Fatal("no probes were sent")
			}
			checkProbes(t, r)
			checkWakeups(t, d, res.NICs[:o.NICs], rep, rep.snap(prev), rep.snap(d.name))
		})
		prev = d.name
	}
	if len(models) > 1 || models[0] != "igb" {
		t.Log(e2eLatencyTable(directions, runs))
	}
	checkShutdown(t, rep, res.NICs[:o.NICs])
}

// e2eLatencyTable formats the runs' latencies as a Markdown table, one row per direction.
func e2eLatencyTable(ds []direction, runs map[string]*latencyRun) string {
	var b strings.Builder
	b.WriteString("\n| NIC | probes | received by | min | median | mean | p99 | max |\n|---|---|---|---|---|---|---|---|\n")
	us := func(ns float64) string { return fmt.Sprintf("%.0f µs", ns/1e3) }
	for _, d := range ds {
		r := runs[d.name]
		if r == nil {
			continue
		}
		rx := "vfio-pci MSI-X"
		if d.in%2 == 1 {
			rx = "uio_pci_generic INTx"
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %s | %s | %s | %s |\n", d.model, r.Received+r.Late, r.Sent, rx,
			us(float64(r.MinNs)), us(float64(r.MedianNs)), us(r.AverageNs), us(float64(r.P99Ns)), us(float64(r.MaxNs)))
	}
	return b.String()
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

// checkProbes checks that one direction forwarded every probe exactly once. How many came
// later than e2eProbeTimeout depends on the machine's load: it is reported.
func checkProbes(t *testing.T, r *latencyRun) {
	t.Helper()
	t.Logf("sent %d, received %d, late %d, lost %d; latency min %v, median %v, mean %v, p99 %v, max %v",
		r.Sent, r.Received, r.Late, r.Lost, time.Duration(r.MinNs), time.Duration(r.MedianNs),
		time.Duration(r.AverageNs).Round(time.Microsecond), time.Duration(r.P99Ns), time.Duration(r.MaxNs))
	if r.Sent != e2eProbes || r.SendErrors != 0 {
		t.Errorf("sent %d probes with %d send errors, want %d and none", r.Sent, r.SendErrors, e2eProbes)
	}
	if r.Received+r.Late != r.Sent || r.Lost != 0 || r.Duplicates != 0 {
		t.Errorf("%d of %d probes came back (%d of them late), lost %d, duplicates %d; want all exactly once",
			r.Received+r.Late, r.Sent, r.Late, r.Lost, r.Duplicates)
	}
}

// e2eReport is what the guest script printed on its "E2E " lines.
type e2eReport struct {
	fails   []string             // "FAIL ..." lines
	snaps   map[string]*snapshot // by name: start, then one after each direction
	devices []byte               // `uiod devices --json` after the restore
	log     []string             // the daemon's log
	runExit int                  // uiod run's exit status after SIGTERM; -1 when not reported
	intx    map[string]string    // by NIC address: the uio port's INTx interrupt number
	orig    map[string]string    // by NIC address: its driver before uiod bind ("" for none)
}

// snapshot is the guest's interrupt counts and the daemon's /status at one point.
type snapshot struct {
	irqs   []irq
	status []byte
}

// snap returns the snapshot called name, empty if the guest took none.
func (r *e2eReport) snap(name string) *snapshot {
	if s := r.snaps[name]; s != nil {
		return s
	}
	return &snapshot{}
}

// irq is one /proc/interrupts line: the interrupt, its count summed over the CPUs, and
// the rest of the line (chip, type and the handlers' names).
type irq struct {
	num   string
	count uint64
	desc  string
}

// parseIRQLine parses a /proc/interrupts line such as
// " 27:   17   IR-PCI-MSI 524288-edge   vfio-msix[0](0000:01:00.0)".
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
	rep := &e2eReport{snaps: map[string]*snapshot{}, runExit: -1, intx: map[string]string{}, orig: map[string]string{}}
	snap := func(name string) *snapshot {
		if rep.snaps[name] == nil {
			rep.snaps[name] = &snapshot{}
		}
		return rep.snaps[name]
	}
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
			name, l, _ := strings.Cut(args, " ")
			if q, ok := parseIRQLine(l); ok {
				s := snap(name)
				s.irqs = append(s.irqs, q)
			}
		case word == "STATUS-BEGIN":
			section = &snap(args).status
		case word == "DEVICES-BEGIN":
			section = &rep.devices
		case word == "STATUS-END" || word == "DEVICES-END":
			section = nil
		case word == "log":
			rep.log = append(rep.log, args)
		case word == "intx":
			if addr, num, ok := strings.Cut(args, " "); ok && num != "" {
				rep.intx[addr] = num
			}
		case word == "original":
			addr, drv, _ := strings.Cut(args, " ")
			rep.orig[addr] = strings.TrimSpace(drv)
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
	Threads []struct {
		Arms          uint64  `json:"arms"`
		Sleeps        uint64  `json:"sleeps"`
		WakeInterrupt uint64  `json:"wakeups_interrupt"`
		WakeTimeout   uint64  `json:"wakeups_timeout"`
		WakeSpurious  uint64  `json:"wakeups_spurious"`
		AsleepSeconds float64 `json:"asleep_seconds"`
	} `json:"threads"`
}

// parseStatus decodes a snapshot's /status and checks it has the ports and the one poll
// thread of the configuration.
func parseStatus(s *snapshot, ports int) (*e2eStatus, error) {
	var st e2eStatus
	if err := json.Unmarshal(s.status, &st); err != nil {
		return nil, fmt.Errorf("daemon /status: %w:\n%s", err, s.status)
	}
	if len(st.Ports) != ports || len(st.Threads) != 1 {
		return nil, fmt.Errorf("daemon /status has %d ports and %d poll threads, want %d and 1:\n%s",
			len(st.Ports), len(st.Threads), ports, s.status)
	}
	return &st, nil
}

// irqDelta returns how often the interrupts whose description contains every one of words
// fired from before to after, and whether after has any.
func irqDelta(before, after *snapshot, words ...string) (uint64, bool) {
	return irqLinesDelta(before, after, irqLines(after, "", words...))
}

// irqLines returns the numbers of after's interrupts that are num (if not "") and whose
// description contains every one of words.
func irqLines(after *snapshot, num string, words ...string) map[string]bool {
	lines := map[string]bool{}
next:
	for _, q := range after.irqs {
		if num != "" && q.num != num {
			continue
		}
		for _, w := range words {
			if !strings.Contains(q.desc, w) {
				continue next
			}
		}
		lines[q.num] = true
	}
	return lines
}

// irqLinesDelta returns how often the interrupts numbered lines fired from before to
// after, and whether there are any.
func irqLinesDelta(before, after *snapshot, lines map[string]bool) (uint64, bool) {
	counts := map[string]uint64{}
	for _, q := range before.irqs {
		counts[q.num] = q.count
	}
	var d uint64
	for _, q := range after.irqs {
		if lines[q.num] {
			d += q.count - counts[q.num]
		}
	}
	return d, len(lines) > 0
}

// checkWakeups checks, from the snapshots before and after one direction's probes, that
// the port the probes came in on received them all and the port they left by sent them,
// and that the idle → interrupt → wake cycle happened on the receiving port (see
// wakeCounts.problems): its interrupt fired, no other port's did. It logs every count; how
// many probes found the thread asleep depends on the machine's load and is reported, not
// asserted.
func checkWakeups(t *testing.T, d direction, nics []string, rep *e2eReport, before, after *snapshot) {
	t.Helper()
	st0, err := parseStatus(before, len(nics))
	if err != nil {
		t.Fatal(err)
	}
	st1, err := parseStatus(after, len(nics))
	if err != nil {
		t.Fatal(err)
	}
	in0, in1 := st0.Ports[d.in].Stats, st1.Ports[d.in].Stats
	out0, out1 := st0.Ports[d.out].Stats, st1.Ports[d.out].Stats
	inName, outName := st1.Ports[d.in].Name, st1.Ports[d.out].Name
	t.Logf("port %s received %d (missed %d), port %s sent %d", inName, in1.RxPackets-in0.RxPackets,
		in1.RxMissed-in0.RxMissed, outName, out1.TxPackets-out0.TxPackets)
	if n := in1.RxPackets - in0.RxPackets; n < e2eProbes {
		t.Errorf("port %s received %d frames, want the %d probes", inName, n, e2eProbes)
	}
	if n := out1.TxPackets - out0.TxPackets; n < e2eProbes {
		t.Errorf("port %s sent %d frames, want the %d probes", outName, n, e2eProbes)
	}

	th0, th1 := st0.Threads[0], st1.Threads[0]
	w := wakeCounts{
		sleeps:   th1.Sleeps - th0.Sleeps,
		woken:    th1.WakeInterrupt - th0.WakeInterrupt,
		spurious: th1.WakeSpurious - th0.WakeSpurious,
	}
	t.Logf("poll thread: arms %d, sleeps %d, wake-ups by interrupt %d (spurious %d), by timeout %d; asleep %.2fs",
		th1.Arms-th0.Arms, w.sleeps, w.woken, w.spurious, th1.WakeTimeout-th0.WakeTimeout, th1.AsleepSeconds-th0.AsleepSeconds)

	// Even ports interrupt by MSI-X through vfio-pci, odd ones by INTx through
	// uio_pci_generic (its /proc/interrupts line has no address: found by number).
	portIRQ := func(i int) (name string, lines map[string]bool) {
		name, lines = "MSI-X (vfio-pci) of "+nics[i], irqLines(after, "", "vfio-msix", nics[i])
		if i%2 == 1 {
			name, lines = "INTx (uio_pci_generic) of "+nics[i], irqLines(after, rep.intx[nics[i]], "uio_pci_generic")
		}
		if len(lines) == 0 {
			t.Errorf("guest /proc/interrupts has no %s: %+v", name, after.irqs)
		}
		return name, lines
	}
	var own map[string]bool
	w.ownName, own = portIRQ(d.in)
	w.own, _ = irqLinesDelta(before, after, own)
	// Every other port's interrupts, but for a line the receiving port shares.
	others := map[string]bool{}
	var names []string
	for i := range nics {
		if i == d.in {
			continue
		}
		name, lines := portIRQ(i)
		names = append(names, name)
		for n := range lines {
			if !own[n] {
				others[n] = true
			}
		}
	}
	w.otherName = strings.Join(names, ", ")
	w.other, _ = irqLinesDelta(before, after, others)
	if d.model == "virtio" && d.out%2 == 1 {
		// QEMU's virtio-net notifies the first used buffer of a virtqueue after a reset
		// whatever its event index asks (signalled_used_valid), and under INTx the
		// transmit queue shares the line: the first frame the port sends may fire it.
		w.firstTx = 1
	}
	t.Logf("%s fired %d times; %s together %d times", w.ownName, w.own, w.otherName, w.other)
	for _, p := range w.problems() {
		t.Error(p)
	}
}

// wakeCounts are one direction's sleep and wake-up counts of the poll thread and the
// interrupt counts of the receiving port (own) and the other ports (other), of which
// firstTx may be the sending port's for its first transmit.
type wakeCounts struct {
	sleeps, woken, spurious uint64
	own, other, firstTx     uint64
	ownName, otherName      string
}

// problems returns what the counts break of what the protocol guarantees. The thread has
// been idle since the previous snapshot when the first probe comes, so it sleeps at least
// once and the receiving port's interrupt wakes it at least once. Only the receiving port
// gets frames and no port interrupts for transmits (but for firstTx), so no other port's
// interrupt fires, and every wake-up by interrupt was the receiving port's: the thread
// drains its vectors at each wake-up, so it cannot wake more often than they fired.
func (w wakeCounts) problems() []string {
	var p []string
	if w.sleeps == 0 {
		p = append(p, "the poll thread never slept, though it was idle when the first probe came")
	}
	if w.woken == 0 || w.own == 0 {
		p = append(p, fmt.Sprintf("the poll thread woke by interrupt %d times and %s fired %d times, want both at least once (the first probe finds the thread asleep)",
			w.woken, w.ownName, w.own))
	}
	if w.other > w.firstTx {
		p = append(p, fmt.Sprintf("%s fired %d times, but those ports received nothing", w.otherName, w.other))
	}
	if w.woken > w.own+w.other {
		p = append(p, fmt.Sprintf("the poll thread woke by interrupt %d times, more than %s fired (%d): some wake-ups were not the receiving port's",
			w.woken, w.ownName, w.own))
	}
	if w.spurious > w.woken {
		p = append(p, fmt.Sprintf("%d spurious wake-ups of %d by interrupt", w.spurious, w.woken))
	}
	return p
}

// checkShutdown checks that SIGTERM stopped the daemon cleanly and that the NICs went back
// to the drivers they had before uiod bind (igb for the igb NICs).
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
	for _, a := range nics {
		want, ok := rep.orig[a]
		if !ok {
			t.Errorf("the guest did not report %s's driver before uiod bind", a)
			continue
		}
		if drivers[a] != want {
			t.Errorf("after uiod unbind --restore %s is on driver %q, want %q", a, drivers[a], want)
		}
	}
}

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
	"github.com/uiod/uiod/nic/igb"
)

// The multi-queue test. One guest boot runs two scenarios in turn (testdata/multiqueue.sh),
// each with both NICs on one driver and `uiod run` forwarding between them (l2fwd, adaptive
// idle policy, 4 RX and 4 TX queues per port, RSS):
//
//   - vfio-pci: MSI-X, one vector per RX queue; two poll threads pinned to the guest's two
//     vCPUs, the queues dealt out between them;
//   - uio_pci_generic: INTx, one line per NIC for all its queues; one poll thread.
//
// The host sends UDP flows that differ in their source port (flows_test.go) into one NIC
// and receives them from the other, at most mqWindow frames in flight so that no ring can
// overflow. After each run of frames the guest prints its interrupt counts and the daemon's
// /status. Each scenario has these runs, each way (nic1 → nic2, nic2 → nic1):
//
//   - spread: mqSpreadFlows flows. Every frame comes back once and in its flow's order,
//     and every RX queue of the receiving port got exactly the frames of the flows the
//     Toeplitz hash of the driver's key sends to it (igb.RSSKey, redirection table entry
//     i → queue i mod 4, indexed by the hash's low 7 bits), which are all four queues.
//   - queue q, for each q: only flows that hash to queue q. Only that queue receives;
//     only its interrupt fires (vfio: its own MSI-X vector; uio: its NIC's INTx line);
//     the poll thread that owns it sleeps and wakes by that interrupt at least once
//     (it was idle when the run began), never more often than the interrupt fired; and
//     the other thread (vfio) is never woken by an interrupt. So each vector fires, and
//     each thread sleeps and wakes on its own queues' vectors only.
//
// Counts that depend on the machine's load (how many frames found a thread asleep) are
// logged, not asserted.
//
// The guest is booted (qemutest, logged in full by the test) as
//
//	qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 512M -smp 2 -nodefaults
//	  -device intel-iommu,intremap=on
//	  -netdev dgram,id=nN,local.type=unix,local.path=…,remote.type=unix,remote.path=…
//	  -device pcie-root-port,id=rpN,bus=pcie.0,chassis=N+1,slot=N+1
//	  -device igb,bus=rpN,netdev=nN,mac=52:54:00:12:34:5x     (N = 0, 1)
//	  -kernel vmlinuz -initrd … -append "console=ttyS0 panic=-1 no_timer_check
//	    intel_iommu=on iommu=pt hugepagesz=2M hugepages=64 tsc=reliable …"
//
// on Debian's kernel (vfio-pci, vfio_iommu_type1, uio_pci_generic as modules).

const (
	// mqQueues is the number of RX and TX queues of each port.
	mqQueues = 4
	// mqSpreadFlows flows go through a spread run, mqSpreadFrames frames each.
	mqSpreadFlows  = 64
	mqSpreadFrames = 4
	// A queue run sends mqQueueFlows flows of the queue, mqQueueFrames frames each.
	mqQueueFlows  = 4
	mqQueueFrames = 4
	// mqWindow frames at most are in flight: far fewer than the 128-descriptor rings.
	mqWindow = 16
	// mqIdle is how long the host waits for a frame to come back before it gives up.
	mqIdle = 30 * time.Second
)

// mqScenario is one driver's configuration in the guest script.
type mqScenario struct {
	driver  string
	threads []int // the poll threads' CPUs
	msix    bool  // one MSI-X vector per queue, else one INTx line per NIC
}

var mqScenarios = []mqScenario{
	{driver: "vfio-pci", threads: []int{0, 1}, msix: true},
	{driver: "uio_pci_generic", threads: []int{0}},
}

// mqRun is one run of flows: into NIC in, out of NIC out; queue is the RX queue all its
// flows hash to, or -1 for a spread run.
type mqRun struct {
	name    string // the snapshot's name, <driver>/<run>
	in, out int
	queue   int
	flows   []int
	perFlow int
	res     flowResult
	err     error
	done    bool
}

// rssQueue is the RX queue the driver's RSS set-up sends a hash to: its redirection table
// has entry i → queue i mod n, indexed by the hash's low 7 bits.
func rssQueue(hash uint32, n int) int { return int(hash&127) % n }

// flowQueue returns the RX queue flow f lands on.
func flowQueue(f int) int { return rssQueue(flowHash(igb.RSSKey[:], f), mqQueues) }

// mqRuns returns a scenario's runs in order.
func mqRuns(driver string) []*mqRun {
	var runs []*mqRun
	spread := make([]int, mqSpreadFlows)
	for f := range spread {
		spread[f] = f
	}
	for _, d := range []struct{ in, out int }{{0, 1}, {1, 0}} {
		runs = append(runs, &mqRun{name: fmt.Sprintf("%s/spread-nic%d", driver, d.in+1),
			in: d.in, out: d.out, queue: -1, flows: spread, perFlow: mqSpreadFrames})
	}
	for _, d := range []struct{ in, out int }{{0, 1}, {1, 0}} {
		for q := 0; q < mqQueues; q++ {
			var flows []int
			for f := 0; len(flows) < mqQueueFlows; f++ {
				if flowQueue(f) == q {
					flows = append(flows, f)
				}
			}
			runs = append(runs, &mqRun{name: fmt.Sprintf("%s/nic%d-queue%d", driver, d.in+1, q),
				in: d.in, out: d.out, queue: q, flows: flows, perFlow: mqQueueFrames})
		}
	}
	return runs
}

// TestIntegrationMultiQueue runs the multi-queue scenarios (see above) in one guest.
func TestIntegrationMultiQueue(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	// The spread runs must reach every queue, or they prove nothing.
	hit := map[int]bool{}
	for f := 0; f < mqSpreadFlows; f++ {
		hit[flowQueue(f)] = true
	}
	if len(hit) != mqQueues {
		t.Fatalf("the %d flows hash to queues %v only", mqSpreadFlows, hit)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "multiqueue.sh"))
	if err != nil {
		t.Fatal(err)
	}
	vm := qemutest.Start(t, qemutest.Options{
		Kernel: k, IOMMU: true, CPUs: 2, HugePages: 64,
		// Without it a 2-vCPU TCG guest may fall back to the HPET clock and stall.
		Cmdline: []string{"tsc=reliable"},
		Files:   guestFiles(t),
		Script:  string(script),
		Timeout: 10 * time.Minute,
	})
	t.Logf("guest: %s", strings.Join(vm.Args(), " "))
	link, err := openFlowLink(vm.NICs)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()

	runs := map[string][]*mqRun{}
	phase := uint32(0)
	host := time.Now()
scenarios:
	for _, sc := range mqScenarios {
		if _, err := vm.WaitOutput("E2E READY "+sc.driver, 5*time.Minute); err != nil {
			t.Errorf("guest not ready for %s: %v", sc.driver, err)
			break
		}
		runs[sc.driver] = mqRuns(sc.driver)
		for _, r := range runs[sc.driver] {
			phase++
			r.res, r.err = link.run(phase, r.in, r.out, r.flows, r.perFlow, mqWindow, mqIdle)
			r.done = true
			if err := vm.Send(r.name); err != nil {
				t.Errorf("guest control port: %v", err)
				break scenarios
			}
			if _, err := vm.WaitOutput("E2E snapshot "+r.name+" taken", time.Minute); err != nil {
				t.Errorf("snapshot %s: %v", r.name, err)
				break scenarios
			}
		}
		if err := vm.Send(sc.driver + "/done"); err != nil {
			t.Errorf("tell the guest to stop %s: %v", sc.driver, err)
			break
		}
	}
	hostTime := time.Since(host)
	res, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: boot %v, script %v (host side %v), QEMU start to power-off %v", res.Kernel,
		res.Boot.Round(time.Millisecond), res.Script.Round(time.Millisecond), hostTime.Round(time.Millisecond),
		res.Wall.Round(time.Millisecond))
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
	if len(res.NICs) < 2 {
		t.Fatalf("guest NICs %q, want two", res.NICs)
	}
	for _, sc := range mqScenarios {
		t.Run(sc.driver, func(t *testing.T) {
			checkScenario(t, sc, res.NICs, res.Output, rep, runs[sc.driver])
		})
	}
}

// mqStatus is the part of the daemon's /status the multi-queue test reads.
type mqStatus struct {
	Ports []struct {
		Name  string `json:"name"`
		Stats struct {
			RxPackets uint64 `json:"rx_packets"`
			TxPackets uint64 `json:"tx_packets"`
			RxMissed  uint64 `json:"rx_missed"`
		} `json:"stats"`
	} `json:"ports"`
	Queues []struct {
		Name      string `json:"name"`
		Thread    int    `json:"thread"`
		RxPackets uint64 `json:"rx_packets"`
		TxPackets uint64 `json:"tx_packets"`
		Drops     uint64 `json:"drops"`
	} `json:"queues"`
	Threads []mqThread `json:"threads"`
}

// mqThread is one poll thread's counters in /status.
type mqThread struct {
	Index         int    `json:"index"`
	CPU           int    `json:"cpu"`
	Arms          uint64 `json:"arms"`
	Sleeps        uint64 `json:"sleeps"`
	WakeInterrupt uint64 `json:"wakeups_interrupt"`
	WakeTimeout   uint64 `json:"wakeups_timeout"`
	WakeSpurious  uint64 `json:"wakeups_spurious"`
}

// queue returns the index in Queues of port p's RX queue q ("p<p>/rx<q>"), or -1.
func (s *mqStatus) queue(p, q int) int {
	name := fmt.Sprintf("p%d/rx%d", p, q)
	for i, x := range s.Queues {
		if x.Name == name {
			return i
		}
	}
	return -1
}

// parseMQStatus decodes a snapshot's /status and checks its shape: two ports, every
// queue of both, and threads poll threads.
func parseMQStatus(s *snapshot, threads int) (*mqStatus, error) {
	var st mqStatus
	if err := json.Unmarshal(s.status, &st); err != nil {
		return nil, fmt.Errorf("daemon /status: %w:\n%s", err, s.status)
	}
	if len(st.Ports) != 2 || len(st.Threads) != threads {
		return nil, fmt.Errorf("daemon /status has %d ports and %d poll threads, want 2 and %d:\n%s",
			len(st.Ports), len(st.Threads), threads, s.status)
	}
	for p := 0; p < 2; p++ {
		for q := 0; q < mqQueues; q++ {
			i := st.queue(p, q)
			if i < 0 {
				return nil, fmt.Errorf("daemon /status lacks queue p%d/rx%d:\n%s", p, q, s.status)
			}
			if th := st.Queues[i].Thread; th < 0 || th >= threads {
				return nil, fmt.Errorf("queue p%d/rx%d on thread %d of %d", p, q, th, threads)
			}
		}
	}
	return &st, nil
}

// mqIRQs reads one scenario's interrupt counts from two snapshots.
type mqIRQs struct {
	before, after *snapshot
	nics          []string
	intx          map[string]string // INTx line of each NIC
}

// msix returns how often MSI-X vector v of NIC n fired.
func (m *mqIRQs) msix(n, v int) uint64 {
	d, _ := irqDelta(m.before, m.after, fmt.Sprintf("vfio-msix[%d](%s)", v, m.nics[n]))
	return d
}

// line returns how often NIC n's INTx line fired, and whether /proc/interrupts has it
// under uio_pci_generic.
func (m *mqIRQs) line(n int) (uint64, bool) {
	num := m.intx[m.nics[n]]
	counts := map[string]uint64{}
	for _, q := range m.before.irqs {
		counts[q.num] = q.count
	}
	for _, q := range m.after.irqs {
		if q.num == num && strings.Contains(q.desc, "uio_pci_generic") {
			return q.count - counts[q.num], true
		}
	}
	return 0, false
}

// e2eFields returns the fields after "E2E <word> " of each such line of out.
func e2eFields(out, word string) [][]string {
	var lines [][]string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(strings.TrimRight(l, "\r"))
		if len(f) >= 2 && f[0] == "E2E" && f[1] == word {
			lines = append(lines, f[2:])
		}
	}
	return lines
}

// checkScenario checks one scenario's runs against the snapshots the guest took.
func checkScenario(t *testing.T, sc mqScenario, nics []string, out string, rep *e2eReport, runs []*mqRun) {
	if len(runs) == 0 {
		t.Fatal("no flows were sent")
	}
	start, err := parseMQStatus(rep.snap(sc.driver+"/start"), len(sc.threads))
	if err != nil {
		t.Fatal(err)
	}
	for i, th := range start.Threads {
		if th.CPU != sc.threads[i] {
			t.Errorf("poll thread %d runs on CPU %d, want %d", i, th.CPU, sc.threads[i])
		}
	}
	var layout []string
	owns := make([][2]int, len(sc.threads)) // queues per port of each thread
	for _, q := range start.Queues {
		layout = append(layout, fmt.Sprintf("%s→thread %d", q.Name, q.Thread))
		owns[q.Thread][q.Name[1]-'0']++
	}
	t.Logf("queues: %s", strings.Join(layout, ", "))
	for i, o := range owns {
		if o[0] == 0 || o[1] == 0 {
			t.Errorf("poll thread %d owns %d queues of p0 and %d of p1, want some of each", i, o[0], o[1])
		}
	}
	intx := map[string]string{}
	for _, f := range e2eFields(out, "intx") {
		for i := 0; i+1 < len(f); i += 2 {
			intx[f[i]] = f[i+1]
		}
	}
	fired := map[[2]int]uint64{} // over the scenario, per NIC and MSI-X vector
	prev := rep.snap(sc.driver + "/start")
	for _, r := range runs {
		if !r.done {
			t.Errorf("%s: not run", r.name)
			continue
		}
		snap := rep.snap(r.name)
		irqs := &mqIRQs{before: prev, after: snap, nics: nics, intx: intx}
		t.Run(strings.TrimPrefix(r.name, sc.driver+"/"), func(t *testing.T) {
			checkRun(t, sc, r, prev, snap, irqs, fired)
		})
		prev = snap
	}
	if sc.msix {
		for n := range 2 {
			for v := 0; v < mqQueues; v++ {
				if fired[[2]int{n, v}] == 0 {
					t.Errorf("MSI-X vector %d of %s never fired", v, nics[n])
				}
			}
		}
	}
	checkScenarioShutdown(t, sc.driver, out, rep)
}

// checkRun checks one run of flows: the host's accounting, the queues' counters, the
// interrupts and the poll threads' wake-ups.
func checkRun(t *testing.T, sc mqScenario, r *mqRun, before, after *snapshot, irqs *mqIRQs, fired map[[2]int]uint64) {
	res := r.res
	t.Logf("%d flows, %d frames sent, %d came back (lost %d, reordered %d, duplicates %d, from the wrong NIC %d, foreign %d)",
		len(r.flows), res.sent, res.received, res.lost, res.reordered, res.dups, res.wrongPort, res.foreign)
	if r.err != nil {
		t.Error(r.err)
	}
	total := len(r.flows) * r.perFlow
	if res.sent != total || res.received != total || res.lost != 0 || res.reordered != 0 || res.dups != 0 || res.wrongPort != 0 {
		t.Errorf("%d of %d frames came back in order (lost %d, reordered %d, duplicates %d, from the wrong NIC %d), want all, each once",
			res.received, total, res.lost, res.reordered, res.dups, res.wrongPort)
	}
	for _, f := range r.flows {
		if res.perFlow[f] != r.perFlow {
			t.Errorf("flow %d (source port %d): %d of %d frames came back", f, flowPort(f), res.perFlow[f], r.perFlow)
		}
	}
	st0, err := parseMQStatus(before, len(sc.threads))
	if err != nil {
		t.Fatal(err)
	}
	st1, err := parseMQStatus(after, len(sc.threads))
	if err != nil {
		t.Fatal(err)
	}

	// Queues: the receiving port's get what the hash says, the sending port's nothing.
	want := [mqQueues]int{}
	for _, f := range r.flows {
		want[flowQueue(f)] += r.perFlow
	}
	var got []string
	for p := 0; p < 2; p++ {
		for q := 0; q < mqQueues; q++ {
			i := st1.queue(p, q)
			a, b := st0.Queues[i], st1.Queues[i]
			rx, tx, drops := b.RxPackets-a.RxPackets, b.TxPackets-a.TxPackets, b.Drops-a.Drops
			exp := 0
			if p == r.in {
				exp = want[q]
				got = append(got, fmt.Sprintf("rx%d %d", q, rx))
			}
			if rx != uint64(exp) || tx != rx || drops != 0 {
				t.Errorf("queue %s received %d, forwarded %d, dropped %d; want %d received, all forwarded",
					b.Name, rx, tx, drops, exp)
			}
		}
	}
	t.Logf("p%d queues: %s (expected %v)", r.in, strings.Join(got, ", "), want)
	if r.queue < 0 {
		for q, n := range want {
			if n == 0 {
				t.Errorf("no flow of the spread run hashes to queue %d", q)
			}
		}
	}
	pin0, pin1 := st0.Ports[r.in].Stats, st1.Ports[r.in].Stats
	pout0, pout1 := st0.Ports[r.out].Stats, st1.Ports[r.out].Stats
	if m := pin1.RxMissed - pin0.RxMissed; m != 0 {
		t.Errorf("port p%d missed %d frames", r.in, m)
	}
	if n := pout1.TxPackets - pout0.TxPackets; n != uint64(total) {
		t.Errorf("port p%d sent %d frames, want %d", r.out, n, total)
	}

	// Interrupts and wake-ups.
	wakes := make([]wakeCounts, len(sc.threads))
	for i := range wakes {
		a, b := st0.Threads[i], st1.Threads[i]
		wakes[i] = wakeCounts{sleeps: b.Sleeps - a.Sleeps, woken: b.WakeInterrupt - a.WakeInterrupt,
			spurious: b.WakeSpurious - a.WakeSpurious}
		t.Logf("poll thread %d (CPU %d): arms %d, sleeps %d, wake-ups by interrupt %d (spurious %d), by timeout %d",
			i, b.CPU, b.Arms-a.Arms, wakes[i].sleeps, wakes[i].woken, wakes[i].spurious, b.WakeTimeout-a.WakeTimeout)
	}
	if sc.msix {
		checkMSIX(t, r, st1, irqs, wakes, fired)
	} else {
		checkINTx(t, r, irqs, wakes[0])
	}
}

// checkMSIX checks a vfio run's vectors and threads. Thread T can only be woken by the
// vectors of its own queues, so it wakes by interrupt at most as often as they fired. In a
// queue run only that queue's vector may fire, its thread sleeps and wakes by it (the
// thread was idle when the run began), and the other thread never wakes by interrupt.
func checkMSIX(t *testing.T, r *mqRun, st *mqStatus, irqs *mqIRQs, wakes []wakeCounts, fired map[[2]int]uint64) {
	own := make([]uint64, len(wakes)) // how often each thread's vectors fired
	var counts []string
	for n := 0; n < 2; n++ {
		for v := 0; v < mqQueues; v++ {
			c := irqs.msix(n, v)
			fired[[2]int{n, v}] += c
			own[st.Queues[st.queue(n, v)].Thread] += c
			counts = append(counts, fmt.Sprintf("nic%d[%d] %d", n+1, v, c))
			if r.queue >= 0 && c != 0 && (n != r.in || v != r.queue) {
				t.Errorf("MSI-X vector %d of %s fired %d times, but only queue %d of %s received",
					v, irqs.nics[n], c, r.queue, irqs.nics[r.in])
			}
		}
	}
	t.Logf("MSI-X vectors fired: %s", strings.Join(counts, ", "))
	for i, w := range wakes {
		if w.woken > own[i] {
			t.Errorf("poll thread %d woke by interrupt %d times, more than its own queues' vectors fired (%d)", i, w.woken, own[i])
		}
	}
	if r.queue < 0 {
		return
	}
	owner := st.Queues[st.queue(r.in, r.queue)].Thread
	for i, w := range wakes {
		if i != owner {
			if w.woken != 0 {
				t.Errorf("poll thread %d woke by interrupt %d times, but none of its queues received", i, w.woken)
			}
			continue
		}
		w.own, w.ownName = irqs.msix(r.in, r.queue), fmt.Sprintf("MSI-X vector %d of %s", r.queue, irqs.nics[r.in])
		w.otherName = "the other vectors"
		for _, p := range w.problems() {
			t.Errorf("poll thread %d: %s", i, p)
		}
	}
}

// checkINTx checks a uio run: the receiving NIC's line serves all its queues, so it fires
// and wakes the one poll thread at least once, and every wake-up by interrupt is its; the
// other NIC's line, unless it is the same line, never fires.
func checkINTx(t *testing.T, r *mqRun, irqs *mqIRQs, w wakeCounts) {
	var ok bool
	w.own, ok = irqs.line(r.in)
	w.ownName = fmt.Sprintf("INTx line %s of %s", irqs.intx[irqs.nics[r.in]], irqs.nics[r.in])
	if !ok {
		t.Fatalf("guest /proc/interrupts has no uio_pci_generic line %q for %s: %+v", irqs.intx[irqs.nics[r.in]], irqs.nics[r.in], irqs.after.irqs)
	}
	w.other, _ = irqs.line(r.out)
	w.otherName = fmt.Sprintf("INTx line %s of %s", irqs.intx[irqs.nics[r.out]], irqs.nics[r.out])
	if irqs.intx[irqs.nics[r.in]] == irqs.intx[irqs.nics[r.out]] {
		t.Logf("both NICs share INTx line %s", irqs.intx[irqs.nics[r.in]])
		w.other = 0
	}
	t.Logf("%s fired %d times, %s %d times", w.ownName, w.own, w.otherName, w.other)
	for _, p := range w.problems() {
		t.Error(p)
	}
}

// checkScenarioShutdown checks that SIGTERM stopped the scenario's daemon cleanly.
func checkScenarioShutdown(t *testing.T, driver, out string, rep *e2eReport) {
	code := -1
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "E2E" && f[2] == driver && strings.HasPrefix(f[1], "run-exit=") {
			code, _ = strconv.Atoi(strings.TrimPrefix(f[1], "run-exit="))
		}
	}
	if code != 0 {
		t.Errorf("uiod run (%s) exited with status %d after SIGTERM, want 0", driver, code)
	}
	clean := false
	for _, l := range rep.log {
		if strings.HasPrefix(l, driver+" ") && strings.Contains(l, "stopped cleanly") {
			clean = true
		}
	}
	if !clean {
		t.Errorf("uiod run (%s) did not log \"stopped cleanly\"", driver)
	}
}

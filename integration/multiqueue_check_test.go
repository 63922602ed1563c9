package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// parseMQStatus decodes a snapshot's /status and checks its shape: two ports, every
// queue of both, and threads poll threads.
func parseMQStatus(s *snapshot, threads int) (*daemonStatus, error) {
	st, err := parseStatus(s, 2, threads)
	if err != nil {
		return nil, err
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
	return st, nil
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
	if num == "" {
		return 0, false
	}
	return irqLinesDelta(m.before, m.after, irqLines(m.after, num, "uio_pci_generic"))
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
		wakes[i] = wakeCountsOf(a, b)
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
func checkMSIX(t *testing.T, r *mqRun, st *daemonStatus, irqs *mqIRQs, wakes []wakeCounts, fired map[[2]int]uint64) {
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

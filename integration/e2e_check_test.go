package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// checkWakeups checks, from the snapshots before and after one direction's probes, that
// the port the probes came in on received them all and the port they left by sent them,
// and that the idle → interrupt → wake cycle happened on the receiving port (see
// wakeCounts.problems): its interrupt fired, no other port's did. It logs every count; how
// many probes found the thread asleep depends on the machine's load and is reported, not
// asserted.
func checkWakeups(t *testing.T, d direction, nics []string, rep *e2eReport, before, after *snapshot) {
	t.Helper()
	st0, err := parseStatus(before, len(nics), 1)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := parseStatus(after, len(nics), 1)
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
	w := wakeCountsOf(th0, th1)
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
	// QEMU's virtio-net notifies the first used buffer of a virtqueue after a reset
	// whatever its event index asks (signalled_used_valid), and under INTx the transmit
	// queue shares the line: a sending virtio port on INTx may fire for its transmits
	// (once, or more when the guest is slow to reclaim). Its line is left out, and logged.
	txShared := d.model == "virtio" && d.out%2 == 1
	for i := range nics {
		if i == d.in {
			continue
		}
		name, lines := portIRQ(i)
		if txShared && i == d.out {
			w.tx, _ = irqLinesDelta(before, after, lines)
			t.Logf("%s (the sending port, whose transmit queue shares its line) fired %d times", name, w.tx)
			continue
		}
		names = append(names, name)
		for n := range lines {
			if !own[n] {
				others[n] = true
			}
		}
	}
	w.otherName = strings.Join(names, ", ")
	w.other, _ = irqLinesDelta(before, after, others)
	t.Logf("%s fired %d times; %s together %d times", w.ownName, w.own, w.otherName, w.other)
	for _, p := range w.problems() {
		t.Error(p)
	}
}

// wakeCounts are one direction's sleep and wake-up counts of the poll thread and the
// interrupt counts of the receiving port (own), of the sending port when its transmits
// share its line (tx: a virtio port on INTx) and of the other ports (other).
type wakeCounts struct {
	sleeps, woken, spurious uint64
	own, tx, other          uint64
	ownName, otherName      string
}

// problems returns what the counts break of what the protocol guarantees. The thread has
// been idle since the previous snapshot when the first probe comes, so it sleeps at least
// once and the receiving port's interrupt wakes it at least once. Only the receiving port
// gets frames and no port interrupts for transmits (but one whose transmit queue shares
// its line, tx), so no other port's interrupt fires, and every wake-up by interrupt was
// the receiving port's or tx's: the thread drains its vectors at each wake-up, so it
// cannot wake more often than they fired.
func (w wakeCounts) problems() []string {
	var p []string
	if w.sleeps == 0 {
		p = append(p, "the poll thread never slept, though it was idle when the first probe came")
	}
	if w.woken == 0 || w.own == 0 {
		p = append(p, fmt.Sprintf("the poll thread woke by interrupt %d times and %s fired %d times, want both at least once (the first probe finds the thread asleep)",
			w.woken, w.ownName, w.own))
	}
	if w.other > 0 {
		p = append(p, fmt.Sprintf("%s fired %d times, but those ports received nothing", w.otherName, w.other))
	}
	if w.woken > w.own+w.tx+w.other {
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
	rep.checkRunExit(t)
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

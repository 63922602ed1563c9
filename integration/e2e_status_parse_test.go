package integration

import (
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestParseStatus checks the reading of a snapshot's /status and its shape checks.
func TestParseStatus(t *testing.T) {
	status := `{"ports": [{"name": "p0", "link_up": true, "stats": {"rx_packets": 7, "tx_packets": 5, "rx_missed": 1}}, {"name": "p1"}],
	"queues": [{"name": "p0/rx0", "thread": 0, "rx_packets": 7}, {"name": "p1/rx1", "thread": 1, "drops": 2}],
	"threads": [{"index": 0, "cpu": 0, "sleeps": 3, "wakeups_interrupt": 2, "wakeups_spurious": 1}, {"index": 1, "cpu": 1, "sleeps": 9}]}`
	s := &snapshot{status: []byte(status)}
	st, err := parseStatus(s, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Ports[0]; p.Name != "p0" || !p.LinkUp || p.Stats.RxPackets != 7 || p.Stats.TxPackets != 5 || p.Stats.RxMissed != 1 {
		t.Errorf("port 0 %+v", p)
	}
	if i := st.queue(1, 1); i != 1 || st.Queues[i].Thread != 1 || st.Queues[i].Drops != 2 {
		t.Errorf("queue p1/rx1 at %d: %+v", i, st.Queues)
	}
	if i := st.queue(1, 0); i != -1 {
		t.Errorf("queue p1/rx0 at %d, want none", i)
	}
	w := wakeCountsOf(statusThread{Sleeps: 1, WakeInterrupt: 1}, st.Threads[0])
	if w.sleeps != 2 || w.woken != 1 || w.spurious != 1 {
		t.Errorf("wake counts %+v", w)
	}

	_, err = parseStatus(s, 2, 1)
	testutil.ErrorContains(t, err, "2 ports and 2 poll threads, want 2 and 1")
	_, err = parseStatus(&snapshot{status: []byte("{")}, 2, 1)
	testutil.ErrorContains(t, err, "daemon /status")
	_, err = parseMQStatus(s, 2)
	testutil.ErrorContains(t, err, "lacks queue p0/rx1")
}

// TestReportLogged checks the search of the daemon's log for a line with every word.
func TestReportLogged(t *testing.T) {
	rep := parseE2E("E2E log INFO nic driver {\"port\": \"p0\", \"nic\": \"igb\"}\nE2E log INFO stopped cleanly\n")
	if !rep.logged("nic driver", `"port": "p0"`, `"nic": "igb"`) {
		t.Error("the driver line was not found")
	}
	if rep.logged("nic driver", `"nic": "virtio"`) {
		t.Error("found a line with words of two lines")
	}
}

// TestMQIRQLine checks that a NIC whose INTx line the guest did not report has none.
func TestMQIRQLine(t *testing.T) {
	rep := parseE2E("E2E irq a  16:  5  IR-IO-APIC  16-fasteoi   uio_pci_generic\nE2E irq b  16:  9  IR-IO-APIC  16-fasteoi   uio_pci_generic\n")
	m := &mqIRQs{before: rep.snap("a"), after: rep.snap("b"), nics: []string{"0000:01:00.0", "0000:02:00.0"},
		intx: map[string]string{"0000:01:00.0": "16"}}
	if n, ok := m.line(0); !ok || n != 4 {
		t.Errorf("line of NIC 1: %d, %v; want 4, true", n, ok)
	}
	if n, ok := m.line(1); ok || n != 0 {
		t.Errorf("line of NIC 2 (not reported): %d, %v; want 0, false", n, ok)
	}
}

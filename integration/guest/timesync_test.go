package guest

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
)

// TimesyncProbes is how many PTP frames TestGuestTimesync sends.
const TimesyncProbes = 50

// TestGuestTimesync checks the igb driver's IEEE 1588 unit against QEMU's igb: two NICs
// wired to each other inside QEMU (-netdev hubport), both on vfio-pci. NIC 0 sends PTP
// Sync frames marked for a TX stamp, NIC 1 receives them: each TX stamp must come, each
// received frame must carry the TS bit with its own sequence id in the RX latch (the byte
// order of RXSATRH), and its RX stamp less its TX stamp less the clocks' offset must be
// at least 0 less the offset's error; two marked frames before a read must report the
// second stamp lost.
func TestGuestTimesync(t *testing.T) {
	nics := guestNICsFor(t, "UIOD_GUEST_TIMESYNC", " -run Timesync", 2, "two igb on a hub")[:2]
	t.Run("linux", func(t *testing.T) {
		for _, addr := range nics {
			checkLinuxTimestamping(t, addr)
		}
	})
	tx, rx := openTimesyncPort(t, nics[0]), openTimesyncPort(t, nics[1])
	d0, _ := tx.DeviceTime()
	time.Sleep(10 * time.Millisecond)
	d1, _ := tx.DeviceTime()
	t.Logf("NIC 0's clock advanced %d ns over a 10 ms sleep", d1-d0)
	if d1 <= d0 {
		t.Fatalf("device clock does not advance: %d then %d", d0, d1)
	}
	sync, err := latency.SyncClocks(tx, rx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NIC 1's clock is NIC 0's %+d ns, ± %d ns", sync.OffsetNs, sync.ErrorNs)
	dst := net.HardwareAddr{0x01, 0x1b, 0x19, 0, 0, 0} // PTP's layer-2 multicast address
	recv := func() *nic.Buf {
		t.Helper()
		bufs := make([]*nic.Buf, 1)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
			if rx.RxBurst(0, bufs) == 1 {
				return bufs[0]
			}
			time.Sleep(50 * time.Microsecond)
		}
		t.Fatal("no frame received on NIC 1")
		return nil
	}
	txStamp := func() (int64, error) { return uiodTxStamp(tx) }
	var minLat, maxLat int64 = 1 << 62, 0
	for i := range TimesyncProbes {
		seq := uint16(0x0100*i + 0x12) // both bytes differ: a swapped sequence id shows
		sendPTP(t, tx, dst, seq)
		at, err := txStamp()
		if err != nil {
			t.Fatalf("probe %d: TX stamp: %v", i, err)
		}
		b := recv()
		got, _, ok := nic.PTPSeq(b.Bytes())
		if !ok || got != seq {
			b.Free()
			t.Fatalf("probe %d: received %x (PTP %v), want seq %#04x", i, b.Bytes(), ok, seq)
		}
		rxAt, err := nic.RxTimestampOf(rx, b, seq)
		b.Free()
		if err != nil {
			t.Fatalf("probe %d: RX stamp: %v", i, err)
		}
		lat := rxAt - at - sync.OffsetNs
		if lat < -sync.ErrorNs {
			t.Errorf("probe %d: RX stamp %d ns before the TX stamp (clock error ± %d ns)", i, -lat, sync.ErrorNs)
		}
		minLat, maxLat = min(minLat, lat), max(maxLat, lat)
	}
	t.Logf("%d probes NIC 0 → hub → NIC 1 on the device clocks: min %d ns, max %d ns", TimesyncProbes, minLat, maxLat)

	// Two marked frames before a read: the latch holds only the first one's stamp.
	sendPTP(t, tx, dst, 1)
	sendPTP(t, tx, dst, 2)
	for range 2 {
		recv().Free()
	}
	if _, err := txStamp(); !errors.Is(err, nic.ErrTimestampLost) {
		t.Errorf("two marked frames, one read: %v, want ErrTimestampLost", err)
	}
	rx.RxTimestamp() // free the RX latch the first of them took
}

// openTimesyncPort binds the igb at addr to vfio-pci, opens it polled and promiscuous,
// turns its IEEE 1588 unit on, and closes it when t ends.
func openTimesyncPort(t *testing.T, addr string) *igb.Port {
	t.Helper()
	dev := openVFIO(t, addr)
	cfg := nic.Config{RxRing: 128, TxRing: 128, Interrupts: nic.IRQNone, Promiscuous: true, LinkTimeout: 5 * time.Second}
	port, err := igb.Open(dev, cfg)
	if err != nil {
		dev.Close()
		t.Fatalf("%s: %v", addr, err)
	}
	t.Cleanup(func() { port.Close() })
	if err := port.EnableTimesync(); err != nil {
		t.Fatal(err)
	}
	return port
}

// sendPTP sends a PTP Sync frame with sequence id seq from port to dst, marked for a TX
// stamp.
func sendPTP(t *testing.T, port *igb.Port, dst net.HardwareAddr, seq uint16) {
	t.Helper()
	b := port.Pools()[0].Get()
	b.SetLen(nic.PutPTP(b.Data(), dst, port.MAC(), nic.PTPSync, seq))
	b.MarkTimestamp()
	if port.TxBurst(0, []*nic.Buf{b}) != 1 {
		b.Free()
		t.Fatal("TX ring full")
	}
}

// uiodTxStamp waits up to 1 s for port's TX stamp.
func uiodTxStamp(port *igb.Port) (int64, error) {
	for end := time.Now().Add(time.Second); ; time.Sleep(10 * time.Microsecond) {
		at, err := port.TxTimestamp()
		if !errors.Is(err, nic.ErrNoTimestamp) || time.Now().After(end) {
			return at, err
		}
	}
}

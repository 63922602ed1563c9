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

// Frames TestGuestTimesyncLinux sends each way, and the bound on a stamp pair's latency
// (TX and RX stamp are taken in one pass through QEMU's hub; only a host stall can
// stretch it, and a stamp in the wrong time base is off by far more).
const (
	linuxToUIODFrames = 20
	uiodToLinuxFrames = 5
	latchProbes       = 2
	maxStampLatency   = time.Second
)

// clockPair is the offset Linux PHC − uiod SYSTIM, measured one way or the other.
type clockPair struct {
	offset, err int64
	how         string
}

// measureOffset measures PHC − SYSTIM both ways (SYSTIM around the PHC, the PHC around
// SYSTIM), requires the two to agree within their errors, and returns the tighter.
func measureOffset(t *testing.T, port *igb.Port, l *linuxPTP) clockPair {
	t.Helper()
	ab, err := latency.SyncReaders(port.DeviceTime, l.DeviceTime)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := latency.SyncReaders(l.DeviceTime, port.DeviceTime)
	if err != nil {
		t.Fatal(err)
	}
	a, ea, b, eb := ab.OffsetNs, ab.ErrorNs, -ba.OffsetNs, ba.ErrorNs
	t.Logf("PHC − SYSTIM: %d ns ± %d ns (SYSTIM, PHC, SYSTIM), %d ns ± %d ns (PHC, SYSTIM, PHC): %+d ns apart", a, ea, b, eb, a-b)
	if d := a - b; d > ea+eb || -d > ea+eb {
		t.Errorf("the two offsets differ by %d ns, more than their errors (%d + %d ns)", d, ea, eb)
	}
	if ea <= eb {
		return clockPair{a, ea, "SYSTIM around PHC"}
	}
	return clockPair{b, eb, "PHC around SYSTIM"}
}

// checkLatency is the coherence check of one stamp pair on two clocks: latency =
// (RX stamp − TX stamp) with both on one time base must be at least −err and under
// maxStampLatency.
func checkLatency(t *testing.T, what string, latency, errNs int64) {
	t.Helper()
	if latency < -errNs || latency > int64(maxStampLatency) {
		t.Errorf("%s: RX − TX − offset = %d ns, want 0 (± %d ns) to %v", what, latency, errNs, maxStampLatency)
	}
}

// TestGuestTimesyncLinux cross-checks uiod's 1588 stamps with Linux's on two QEMU igb on
// one hub, on Debian's kernel: NIC 0 stays on Linux's igb (hardware timestamping on, an
// AF_PACKET socket with SO_TIMESTAMPING, its PHC), NIC 1 goes to vfio-pci under uiod's
// igb driver. The offset PHC − SYSTIM is measured both ways; then PTPv2 Sync frames go
// Linux → uiod (Linux's TX stamp, uiod's RX stamp) and uiod → Linux (uiod's TX stamp,
// Linux's RX stamp), and every pair less the offset must be small and not negative.
// QEMU frees its RX latch on an RXSATRH read, which Linux's igb never does, so each
// uiod → Linux frame after the first needs the Linux NIC's link bounced (rearm); the
// last latchProbes frames go without, and the log shows whether Linux stamped them.
func TestGuestTimesyncLinux(t *testing.T) {
	nics := guestNICsFor(t, "UIOD_GUEST_TIMESYNC_LINUX", " -run TimesyncLinux", 2, "two igb on a hub, on Debian's kernel")
	l := openLinuxPTP(t, nics[0])
	t.Logf("Linux: %s (%s), PHC %s, RX filter %d", l.name, nics[0], l.phc.Name(), l.filter)
	port := openTimesyncPort(t, nics[1])
	dst := net.HardwareAddr{0x01, 0x1b, 0x19, 0, 0, 0}

	// Linux → uiod.
	off := measureOffset(t, port, l)
	buf := make([]byte, nic.PTPFrameLen)
	bufs := make([]*nic.Buf, 1)
	for i := range linuxToUIODFrames {
		seq := uint16(0x0100*i + 0x21)
		txAt, err := l.send(buf[:nic.PutPTP(buf, dst, l.mac, nic.PTPSync, seq)], 2*time.Second)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		rxAt, ok := uiodRecv(t, port, bufs, seq)
		if !ok {
			t.Fatalf("frame %d (seq %#04x): not received by uiod", i, seq)
		}
		lat := rxAt - txAt + off.offset
		t.Logf("Linux → uiod frame %2d seq %#04x: Linux TX %d, uiod RX %d, RX − TX − offset %d ns (± %d)", i, seq, txAt, rxAt, lat, off.err)
		checkLatency(t, "Linux → uiod", lat, off.err)
	}
	after := measureOffset(t, port, l)
	t.Logf("offset moved %+d ns over the Linux → uiod frames", after.offset-off.offset)

	// uiod → Linux: each frame on a freshly armed latch, then latchProbes more without
	// rearming, which show whether QEMU frees the latch on Linux's reads.
	stamped := 0
	for i := range uiodToLinuxFrames + latchProbes {
		if i > 0 && i < uiodToLinuxFrames {
			l.rearm(t)
		}
		off := measureOffset(t, port, l)
		seq := uint16(0x0100*i + 0x12)
		txAt, rxAt := uiodToLinux(t, port, l, dst, seq)
		switch {
		case rxAt == 0:
			t.Logf("uiod → Linux frame %d seq %#04x (latch rearmed: %v): uiod TX %d, no hardware RX stamp from Linux", i, seq, i < uiodToLinuxFrames, txAt)
		case i < uiodToLinuxFrames:
			stamped++
			fallthrough
		default:
			lat := rxAt - off.offset - txAt
			t.Logf("uiod → Linux frame %d seq %#04x (latch rearmed: %v): uiod TX %d, Linux RX %d, RX − TX − offset %d ns (± %d, %s)", i, seq, i < uiodToLinuxFrames, txAt, rxAt, lat, off.err, off.how)
			checkLatency(t, "uiod → Linux", lat, off.err)
		}
	}
	if stamped == 0 {
		t.Errorf("Linux stamped none of %d frames from uiod", uiodToLinuxFrames)
	}
}

// uiodToLinux sends PTP Sync seq from port, marked, and returns uiod's TX stamp and the
// raw hardware RX stamp Linux gave the frame (0 when none).
func uiodToLinux(t *testing.T, port *igb.Port, l *linuxPTP, dst net.HardwareAddr, seq uint16) (txAt, rxAt int64) {
	t.Helper()
	sendPTP(t, port, dst, seq)
	txAt, err := uiodTxStamp(port)
	if err != nil {
		t.Fatalf("seq %#04x: uiod TX stamp: %v", seq, err)
	}
	for {
		f, rxAt, err := l.recv(2 * time.Second)
		if err != nil {
			t.Fatalf("seq %#04x: %v", seq, err)
		}
		if got, _, ok := nic.PTPSeq(f); ok && got == seq {
			return txAt, rxAt
		}
		// a frame of an earlier round, or not ours
	}
}

// uiodRecv polls port for the PTP frame seq (other frames are dropped) and returns its
// RX stamp, at most 5 s.
func uiodRecv(t *testing.T, port *igb.Port, bufs []*nic.Buf, seq uint16) (int64, bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if port.RxBurst(0, bufs) != 1 {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		b := bufs[0]
		got, _, ok := nic.PTPSeq(b.Bytes())
		if !ok || got != seq {
			if b.RxTimestamped() {
				port.RxTimestamp() // free the latch a stray PTP frame took
			}
			b.Free()
			continue
		}
		at, err := nic.RxTimestampOf(port, b, seq)
		b.Free()
		if err != nil {
			t.Fatalf("seq %#04x: uiod RX stamp: %v", seq, err)
		}
		return at, true
	}
	return 0, false
}

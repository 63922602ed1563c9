package guest

import (
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/igb"
)

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

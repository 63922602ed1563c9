package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// linuxPTP is one igb left on Linux's igb driver, set up as a PTP endpoint the way
// linuxptp does it: hardware timestamping on (SIOCSHWTSTAMP, TX on, PTPv2 layer-2 event
// frames on receive), an AF_PACKET socket bound to ethertype 0x88F7 with SO_TIMESTAMPING
// for raw hardware stamps, and the NIC's PTP hardware clock (/dev/ptpN) read with
// clock_gettime on its fd.
type linuxPTP struct {
	name    string
	ifindex int
	mac     net.HardwareAddr
	ctl     int // AF_INET socket for the interface ioctls
	sock    int // AF_PACKET socket, ETH_P_1588
	phc     *os.File
	clock   int32
	filter  int32 // the RX filter the driver took
}

// htons is v in network byte order, as AF_PACKET wants the protocol.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openLinuxPTP sets up the interface of PCI function addr, which must be on Linux's igb.
func openLinuxPTP(t *testing.T, addr string) *linuxPTP {
	t.Helper()
	if d := driverOf(t, addr); d != "igb" {
		t.Fatalf("%s is on %q, want Linux's igb", addr, d)
	}
	ifs, err := os.ReadDir(filepath.Join("/sys/bus/pci/devices", addr, "net"))
	if err != nil || len(ifs) == 0 {
		t.Fatalf("%s: no network interface: %v", addr, err)
	}
	ifc, err := net.InterfaceByName(ifs[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	l := &linuxPTP{name: ifc.Name, ifindex: ifc.Index, mac: ifc.HardwareAddr, ctl: -1, sock: -1}
	t.Cleanup(l.close)
	if l.ctl, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		t.Fatal(err)
	}
	l.bringUp(t)
	info, err := unix.IoctlGetEthtoolTsInfo(l.ctl, l.name)
	if err != nil {
		t.Fatalf("%s: ETHTOOL_GET_TS_INFO: %v", l.name, err)
	}
	if info.Phc_index < 0 {
		t.Fatalf("%s: no PTP hardware clock", l.name)
	}
	l.openPHC(t, int(info.Phc_index))
	l.openSocket(t)
	return l
}

// setUp sets or clears the interface's IFF_UP.
func (l *linuxPTP) setUp(up bool) error {
	ifr, err := unix.NewIfreq(l.name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(l.ctl, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: SIOCGIFFLAGS: %w", l.name, err)
	}
	flags := ifr.Uint16() &^ unix.IFF_UP
	if up {
		flags |= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(l.ctl, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("%s: SIOCSIFFLAGS: %w", l.name, err)
	}
	return nil
}

// waitCarrier waits until the interface reports carrier, at most d.
func (l *linuxPTP) waitCarrier(d time.Duration) error {
	path := filepath.Join("/sys/class/net", l.name, "carrier")
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == "1" {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s: no carrier after %v", l.name, d)
		}
	}
}

// hwtstamp turns hardware timestamping on: TX on, RX PTPv2 layer-2 event frames (the
// driver may widen the filter; the one it took is kept in filter).
func (l *linuxPTP) hwtstamp(t *testing.T) {
	t.Helper()
	cfg := &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT}
	if err := unix.IoctlSetHwTstamp(l.ctl, l.name, cfg); err != nil {
		t.Fatalf("%s: SIOCSHWTSTAMP tx on, rx PTPv2 L2 event: %v", l.name, err)
	}
	l.filter = cfg.Rx_filter
}

// rearm bounces the link (down, up, carrier): Linux's igb resets the NIC on the way
// down and programs its 1588 unit again on the way up, so QEMU's RX latch, which
// Linux's reads do not free, is empty again. The PHC restarts from the system time.
func (l *linuxPTP) rearm(t *testing.T) {
	t.Helper()
	if err := l.setUp(false); err != nil {
		t.Fatal(err)
	}
	l.bringUp(t)
}

// bringUp sets the interface up, waits for carrier and turns hardware timestamping on.
func (l *linuxPTP) bringUp(t *testing.T) {
	t.Helper()
	if err := l.setUp(true); err != nil {
		t.Fatal(err)
	}
	if err := l.waitCarrier(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	l.hwtstamp(t)
}

// openPHC opens /dev/ptpN (made from sysfs when devtmpfs lacks it) and derives its
// dynamic clock id (the kernel's FD_TO_CLOCKID: ~fd << 3 | CLOCKFD).
func (l *linuxPTP) openPHC(t *testing.T, index int) {
	t.Helper()
	dev := fmt.Sprintf("/dev/ptp%d", index)
	if _, err := os.Stat(dev); errors.Is(err, os.ErrNotExist) {
		b, err := os.ReadFile(fmt.Sprintf("/sys/class/ptp/ptp%d/dev", index))
		if err != nil {
			t.Fatal(err)
		}
		maj, mnr, _ := strings.Cut(strings.TrimSpace(string(b)), ":")
		ma, _ := strconv.Atoi(maj)
		mi, _ := strconv.Atoi(mnr)
		if err := unix.Mknod(dev, unix.S_IFCHR|0o600, int(unix.Mkdev(uint32(ma), uint32(mi)))); err != nil {
			t.Fatalf("mknod %s: %v", dev, err)
		}
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.phc = f
	const clockFD = 3
	l.clock = int32(^uint32(f.Fd())<<3 | clockFD)
}

// DeviceTime reads the PHC in nanoseconds.
func (l *linuxPTP) DeviceTime() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(l.clock, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime %s: %w", l.phc.Name(), err)
	}
	return ts.Nano(), nil
}

// openSocket opens the AF_PACKET socket: bound to the interface and ethertype 0x88F7,
// promiscuous (the PTP multicast address passes), its own frames not looped back, raw
// hardware stamps on receive and transmit.
func (l *linuxPTP) openSocket(t *testing.T) {
	t.Helper()
	proto := htons(unix.ETH_P_1588)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		t.Fatal(err)
	}
	l.sock = fd
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: l.ifindex}); err != nil {
		t.Fatalf("bind AF_PACKET to %s: %v", l.name, err)
	}
	mreq := &unix.PacketMreq{Ifindex: int32(l.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, mreq); err != nil {
		t.Fatalf("PACKET_ADD_MEMBERSHIP promisc: %v", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		t.Fatalf("PACKET_IGNORE_OUTGOING: %v", err)
	}
	flags := unix.SOF_TIMESTAMPING_RX_HARDWARE | unix.SOF_TIMESTAMPING_TX_HARDWARE |
		unix.SOF_TIMESTAMPING_RAW_HARDWARE | unix.SOF_TIMESTAMPING_OPT_TSONLY
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); err != nil {
		t.Fatalf("SO_TIMESTAMPING: %v", err)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
}

// rawStamp returns the raw hardware stamp of SCM_TIMESTAMPING in the control messages
// oob (its third timespec), 0 when there is none or it is zero.
func rawStamp(oob []byte) (int64, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPING || len(m.Data) < 48 {
			continue
		}
		sec := int64(binary.NativeEndian.Uint64(m.Data[32:]))
		nsec := int64(binary.NativeEndian.Uint64(m.Data[40:]))
		return sec*1e9 + nsec, nil
	}
	return 0, nil
}

// recv waits up to d for a PTP frame and returns it with its raw hardware RX stamp (0
// when the frame was not stamped).
func (l *linuxPTP) recv(d time.Duration) (frame []byte, stamp int64, err error) {
	buf, oob := make([]byte, 2048), make([]byte, 512)
	for end := time.Now().Add(d); time.Now().Before(end); {
		n, oobn, _, _, err := unix.Recvmsg(l.sock, buf, oob, 0)
		// ENETDOWN is the socket's pending error from a rearm's link bounce, reported once.
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENETDOWN) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("recvmsg %s: %w", l.name, err)
		}
		stamp, err := rawStamp(oob[:oobn])
		return buf[:n], stamp, err
	}
	return nil, 0, fmt.Errorf("%s: no PTP frame in %v", l.name, d)
}

// send transmits frame with a hardware TX stamp request and waits up to d for the stamp
// on the socket's error queue.
func (l *linuxPTP) send(frame []byte, d time.Duration) (int64, error) {
	if _, err := unix.Write(l.sock, frame); err != nil {
		return 0, fmt.Errorf("send on %s: %w", l.name, err)
	}
	buf, oob := make([]byte, 2048), make([]byte, 512)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		_, oobn, _, _, err := unix.Recvmsg(l.sock, buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("error queue of %s: %w", l.name, err)
		}
		if at, err := rawStamp(oob[:oobn]); err != nil || at != 0 {
			return at, err
		}
	}
	return 0, fmt.Errorf("%s: no hardware TX stamp in %v", l.name, d)
}

// close turns timestamping off and the interface down, and closes what it opened.
func (l *linuxPTP) close() {
	if l.sock >= 0 {
		unix.Close(l.sock)
	}
	if l.phc != nil {
		l.phc.Close()
	}
	if l.ctl >= 0 {
		unix.IoctlSetHwTstamp(l.ctl, l.name, &unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_OFF, Rx_filter: unix.HWTSTAMP_FILTER_NONE})
		l.setUp(false)
		unix.Close(l.ctl)
	}
}

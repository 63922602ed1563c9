package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
)

// prober sends ICMP echo requests out of one interface through AF_PACKET and times their
// return: a reflector (uiod reflect, testpmd macswap) sends the request back with the
// MACs swapped, the kernel answers with an echo reply; either matches by id and sequence.
type prober struct {
	fd       int
	ifindex  int
	src, dst net.HardwareAddr
	srcIP    net.IP
	dstIP    net.IP
	id       uint16
	seq      uint16
	frame    []byte
	buf      []byte
}

func newProber(ifname string, dst net.HardwareAddr, srcIP, dstIP net.IP) (*prober, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP)))
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifc.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind to %s: %w", ifname, err)
	}
	return &prober{fd: fd, ifindex: ifc.Index, src: ifc.HardwareAddr, dst: dst, srcIP: srcIP.To4(), dstIP: dstIP.To4(),
		id: uint16(unix.Getpid()), frame: make([]byte, 14+20+8+16), buf: make([]byte, 2048)}, nil
}

func (p *prober) Close() error { return unix.Close(p.fd) }

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// build writes echo request seq into p.frame.
func (p *prober) build(seq uint16) {
	f := p.frame
	copy(f[0:6], p.dst)
	copy(f[6:12], p.src)
	binary.BigEndian.PutUint16(f[12:14], unix.ETH_P_IP)
	ip := f[14:34]
	clear(ip)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(len(f)-14))
	binary.BigEndian.PutUint16(ip[4:6], seq)
	ip[8], ip[9] = 64, unix.IPPROTO_ICMP
	copy(ip[12:16], p.srcIP)
	copy(ip[16:20], p.dstIP)
	binary.BigEndian.PutUint16(ip[10:12], testutil.Checksum(ip))
	ic := f[34:]
	clear(ic)
	ic[0] = 8 // echo request
	binary.BigEndian.PutUint16(ic[4:6], p.id)
	binary.BigEndian.PutUint16(ic[6:8], seq)
	copy(ic[8:], "uiod-afxdp-bench")
	binary.BigEndian.PutUint16(ic[2:4], testutil.Checksum(ic))
}

// matches reports whether frame is probe seq coming back: ICMP echo request or reply
// with our id and seq, not the copy of our own send.
func (p *prober) matches(frame []byte, seq uint16) bool {
	if len(frame) < 42 || binary.BigEndian.Uint16(frame[12:14]) != unix.ETH_P_IP || frame[23] != unix.IPPROTO_ICMP {
		return false
	}
	ihl := int(frame[14]&0xf) * 4
	ic := frame[14+ihl:]
	if len(ic) < 8 || (ic[0] != 0 && ic[0] != 8) {
		return false
	}
	return binary.BigEndian.Uint16(ic[4:6]) == p.id && binary.BigEndian.Uint16(ic[6:8]) == seq
}

// errLost is a probe that did not come back within the timeout.
var errLost = errors.New("probe lost")

// once sends one probe and waits up to timeout for it to come back, returning its
// round-trip time. The receive is a blocking recvfrom with SO_RCVTIMEO, the same for
// every forwarder.
func (p *prober) once(timeout time.Duration) (time.Duration, error) {
	p.seq++
	seq := p.seq
	p.build(seq)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(p.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, err
	}
	to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: p.ifindex, Halen: 6}
	copy(to.Addr[:], p.dst)
	start := time.Now()
	if err := unix.Sendto(p.fd, p.frame, 0, to); err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	deadline := start.Add(timeout)
	for {
		n, from, err := unix.Recvfrom(p.fd, p.buf, 0)
		now := time.Now()
		if err == nil {
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			if p.matches(p.buf[:n], seq) {
				return now.Sub(start), nil
			}
		} else if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return 0, fmt.Errorf("receive: %w", err)
		}
		if now.After(deadline) {
			return 0, errLost
		}
	}
}

// rtts is a run's round-trip times and how many were lost.
type rtts struct {
	samples []time.Duration
	lost    int
}

// run sends n probes, one at a time, gap apart, on a thread pinned to cpu (-1: any).
func (p *prober) run(n int, gap, timeout time.Duration, cpu int) (rtts, error) {
	var r rtts
	errc := make(chan error, 1)
	go func() {
		// The thread stays locked: when the goroutine ends it ends with it, so that its
		// narrowed affinity never passes to another goroutine (nor to a process the test
		// starts from that thread, which would inherit it).
		runtime.LockOSThread()
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			_ = unix.SchedSetaffinity(0, &set)
		}
		next := time.Now()
		for range n {
			d, err := p.once(timeout)
			switch {
			case errors.Is(err, errLost):
				r.lost++
			case err != nil:
				errc <- err
				return
			default:
				r.samples = append(r.samples, d)
			}
			next = next.Add(gap)
			time.Sleep(time.Until(next))
		}
		errc <- nil
	}()
	err := <-errc
	slices.Sort(r.samples)
	return r, err
}

// quantile is the q-quantile of the sorted samples by nearest rank (0 without any).
func (r rtts) quantile(q float64) time.Duration {
	if len(r.samples) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(r.samples)))) - 1
	return r.samples[max(i, 0)]
}

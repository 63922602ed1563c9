package integration

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// The host's flow generator of the multi-queue test: UDP over IPv4 frames whose source
// port says which flow they belong to (so RSS spreads them), each carrying its flow's
// sequence number, sent into one guest NIC's wire and received from another's.

// Addresses of the generated flows. The source port of flow f is flowBasePort+f.
var (
	flowSrcIP    = [4]byte{10, 1, 0, 1}
	flowDstIP    = [4]byte{10, 1, 0, 2}
	flowSrcMAC   = [6]byte{0x02, 0x75, 0x69, 0x6f, 0x64, 0x11}
	flowDstMAC   = [6]byte{0x02, 0x75, 0x69, 0x6f, 0x64, 0x12}
	flowBasePort = uint16(40000)
	flowDstPort  = uint16(4791)
)

// Frame layout: Ethernet, IPv4 without options, UDP, then {magic u32, phase u32, flow u32,
// seq u32}, zero padded to flowFrameLen.
const (
	flowMagic    = 0x75694d51 // "uiMQ"
	flowFrameLen = 64
	flowOffIP    = 14
	flowOffUDP   = flowOffIP + 20
	flowOffData  = flowOffUDP + 8
)

// flowPort returns flow f's UDP source port.
func flowPort(f int) uint16 { return flowBasePort + uint16(f) }

// flowFrame builds frame seq of flow f in phase.
func flowFrame(phase uint32, f int, seq uint32) []byte {
	b := make([]byte, flowFrameLen)
	copy(b[0:6], flowDstMAC[:])
	copy(b[6:12], flowSrcMAC[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[flowOffIP:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], flowFrameLen-flowOffIP)
	ip[8] = 64
	ip[9] = 17 // UDP
	copy(ip[12:16], flowSrcIP[:])
	copy(ip[16:20], flowDstIP[:])
	binary.BigEndian.PutUint16(ip[10:], testutil.Checksum(ip[:20]))
	udp := b[flowOffUDP:]
	binary.BigEndian.PutUint16(udp[0:], flowPort(f))
	binary.BigEndian.PutUint16(udp[2:], flowDstPort)
	binary.BigEndian.PutUint16(udp[4:], flowFrameLen-flowOffUDP) // checksum 0: none
	d := b[flowOffData:]
	binary.BigEndian.PutUint32(d[0:], flowMagic)
	binary.BigEndian.PutUint32(d[4:], phase)
	binary.BigEndian.PutUint32(d[8:], uint32(f))
	binary.BigEndian.PutUint32(d[12:], seq)
	return b
}

// parseFlowFrame returns the phase, flow and sequence number of a generated frame; ok is
// false for any other frame.
func parseFlowFrame(b []byte) (phase uint32, f int, seq uint32, ok bool) {
	if len(b) < flowOffData+16 || binary.BigEndian.Uint16(b[12:]) != 0x0800 || b[flowOffIP+9] != 17 ||
		binary.BigEndian.Uint32(b[flowOffData:]) != flowMagic {
		return 0, 0, 0, false
	}
	d := b[flowOffData:]
	return binary.BigEndian.Uint32(d[4:]), int(binary.BigEndian.Uint32(d[8:])), binary.BigEndian.Uint32(d[12:]), true
}

// toeplitz is the RSS hash of in with key (Microsoft's RSS specification): for every set
// bit of in, XOR the 32 key bits starting at that bit's position.
func toeplitz(key, in []byte) uint32 {
	var h uint32
	k := binary.BigEndian.Uint32(key)
	for i, b := range in {
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= k
			}
			k <<= 1
			if i+4 < len(key) && key[i+4]&(1<<bit) != 0 {
				k |= 1
			}
		}
	}
	return h
}

// flowHash is the IPv4/UDP RSS hash of flow f: source address, destination address,
// source port, destination port.
func flowHash(key []byte, f int) uint32 {
	var in [12]byte
	copy(in[0:], flowSrcIP[:])
	copy(in[4:], flowDstIP[:])
	binary.BigEndian.PutUint16(in[8:], flowPort(f))
	binary.BigEndian.PutUint16(in[10:], flowDstPort)
	return toeplitz(key, in[:])
}

// flowResult is what one run of flows through the guest came to.
type flowResult struct {
	sent, received  int
	perFlow         map[int]int // frames received per flow
	lost            int         // sent but never received
	reordered, dups int         // within a flow
	wrongPort       int         // frames of the run that came out of another NIC
	foreign         int         // frames the generator did not send, or of another run
}

// flowLink is the host's end of the guest NICs' wires, for runs of flows that go into one
// NIC and come back out of another.
type flowLink struct {
	conns []*net.UnixConn
	guest []*net.UnixAddr
	wg    sync.WaitGroup

	mu  sync.Mutex
	rcv flowReceiver
}

// flowReceiver checks the frames of one run as they arrive.
type flowReceiver struct {
	phase uint32
	out   int            // the NIC the frames must come out of
	next  map[int]uint32 // next expected sequence number per flow; nil between runs
	res   flowResult
}

// openFlowLink binds the host sockets of nics.
func openFlowLink(nics []qemutest.NIC) (*flowLink, error) {
	l := &flowLink{}
	for _, n := range nics {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.HostSocket, Net: "unixgram"})
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("host socket of guest NIC %s: %w", n.MAC, err)
		}
		l.conns = append(l.conns, c)
		l.guest = append(l.guest, &net.UnixAddr{Name: n.GuestSocket, Net: "unixgram"})
	}
	for i := range l.conns {
		l.wg.Add(1)
		go l.receive(i)
	}
	return l, nil
}

// Close closes the sockets and waits for the receivers to stop.
func (l *flowLink) Close() {
	for _, c := range l.conns {
		c.Close()
	}
	l.wg.Wait()
}

// receive reads the frames that come out of NIC i.
func (l *flowLink) receive(i int) {
	defer l.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, err := l.conns[i].Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		phase, f, seq, ok := parseFlowFrame(buf[:n])
		l.mu.Lock()
		l.rcv.frame(i, phase, f, seq, ok)
		l.mu.Unlock()
	}
}

// frame accounts for one frame that came out of NIC i.
func (r *flowReceiver) frame(i int, phase uint32, f int, seq uint32, ok bool) {
	want, known := r.next[f]
	switch {
	case !ok || r.next == nil || phase != r.phase || !known:
		r.res.foreign++
	case i != r.out:
		r.res.wrongPort++
	case seq == want:
		r.next[f] = seq + 1
		r.res.received++
		r.res.perFlow[f]++
	case seq < want:
		r.res.dups++
	default: // frames want..seq-1 of the flow are missing or come later
		r.res.reordered++
		r.next[f] = seq + 1
		r.res.received++
		r.res.perFlow[f]++
	}
}

// run sends perFlow frames of each of flows (round robin over the flows) into NIC in with
// at most window frames in flight, so that the guest's rings never overflow however slow
// it is, and waits until all came back out of NIC out, or none came for idle. A flow's
// frames must come back in order, each once.
func (l *flowLink) run(phase uint32, in, out int, flows []int, perFlow, window int, idle time.Duration) (flowResult, error) {
	l.mu.Lock()
	l.rcv = flowReceiver{phase: phase, out: out, next: map[int]uint32{}, res: flowResult{perFlow: map[int]int{}}}
	for _, f := range flows {
		l.rcv.next[f] = 0
	}
	l.mu.Unlock()
	back := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.rcv.res.received + l.rcv.res.dups + l.rcv.res.wrongPort
	}
	// progress waits until cond holds, giving up after idle without a frame coming back.
	progress := func(cond func(back int) bool) bool {
		for {
			got := back()
			if cond(got) {
				return true
			}
			if !testutil.WaitFor(idle, func() bool { n := back(); return n != got || cond(n) }) {
				return false
			}
		}
	}
	sent := 0
	var err error
send:
	for seq := 0; seq < perFlow; seq++ {
		for _, f := range flows {
			if !progress(func(got int) bool { return sent-got < window }) {
				err = fmt.Errorf("no frame came back for %v with %d in flight", idle, sent-back())
				break send
			}
			if _, werr := l.conns[in].WriteToUnix(flowFrame(phase, f, uint32(seq)), l.guest[in]); werr != nil {
				err = fmt.Errorf("send into guest NIC %d: %w", in, werr)
				break send
			}
			sent++
		}
	}
	if err == nil && !progress(func(got int) bool { return got >= sent }) {
		err = fmt.Errorf("%d of %d frames came back, none for %v", back(), sent, idle)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	res := l.rcv.res
	res.sent = sent
	res.lost = sent - res.received
	l.rcv.next = nil // what still comes belongs to no run
	return res, err
}

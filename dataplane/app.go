package dataplane

import (
	"fmt"

	"github.com/uiod/uiod/nic"
)

// App is packet-processing code that runs inside the poll loop: once per non-empty RX
// burst, on the poll thread that received it.
//
// Process decides the fate of every frame of b, once each: b.Send(i, p) or b.SendAll(p)
// sends it out of a port, b.Drop(i, r) frees it and counts it under reason r, and
// b.ToKernel(i, r) hands it to the RX port's kernel exception path. A frame left
// undecided is dropped and counted as DropNoVerdict.
//
// Process may rewrite frames in place (Buf.Bytes, Buf.SetLen). It must not block, should
// not allocate (a busy poll thread that allocates lengthens every GC pause), and must not
// keep b, its Frames or the buffers after it returns: the dataplane then sends each frame
// or frees it, which is the ownership rule of nic.Port. One App value serves every thread
// at once; Burst.Thread tells them apart for per-thread state.
type App interface {
	Process(b *Burst)
}

// AppFunc adapts an ordinary function to App.
type AppFunc func(b *Burst)

// Process calls f(b).
func (f AppFunc) Process(b *Burst) { f(b) }

// The built-in apps. They are comparable values, so a Config can be checked against them.
var (
	// L2Fwd sends every frame received on a queue out of the queue's TxPort/TxQ
	// unchanged. Configure both directions of a port pair as two queues.
	L2Fwd App = l2fwd{}
	// Reflect swaps the source and destination MAC addresses and sends the frame back out
	// of the port it came in on.
	Reflect App = reflectApp{}
)

type l2fwd struct{}

func (l2fwd) Process(b *Burst) { b.SendAll(b.Peer) }
func (l2fwd) String() string   { return "l2fwd" }

type reflectApp struct{}

func (reflectApp) Process(b *Burst) {
	for _, f := range b.Frames {
		swapMACs(f.Bytes())
	}
	b.SendAll(b.Port)
}
func (reflectApp) String() string { return "reflect" }

// builtinApps are the apps ParseApp knows, by configuration name.
var builtinApps = []App{L2Fwd, Reflect}

// ParseApp returns the built-in app named s: "l2fwd" or "reflect".
func ParseApp(s string) (App, error) {
	for _, a := range builtinApps {
		if appName(a) == s {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown app %q (want l2fwd or reflect)", s)
}

// appName names an app for logs: its String method, or its type.
func appName(a App) string {
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", a)
}

// PortID is a port's index in Config.Ports.
type PortID uint16

// Burst is one RX burst as an App sees it, and the decisions the App takes on it. The
// dataplane reuses it for every burst of a thread.
type Burst struct {
	// Thread is the index of the poll thread, in [0, len(Config.Threads)).
	Thread int
	// Port and Queue are the RX port and queue the frames came from.
	Port  PortID
	Queue int
	// Peer is the queue's configured output (its TxPort): l2fwd's destination.
	Peer PortID
	// Frames are the received frames, at least one.
	Frames []*nic.Buf
	// Time is idle.Now() at the poll that received the burst, in nanoseconds.
	Time int64

	verdict  []verdict    // per frame; zero = undecided
	extra    []extraFrame // SendCopy's buffers, in call order (copy.go)
	all      verdict      // SendAll's decision for every frame, zero when per frame
	txOf     []int16      // PortID → this thread's TX slot for it, -1 none
	peerSlot int16        // the queue's own TX slot (its TxPort/TxQ)
	kernel   int16        // the TX slot of the RX port's kernel path, -1 none
}

// verdict is one frame's fate: 0 undecided, 1+slot sent through TX slot, or dropVerdict
// with the reason in the low byte.
type verdict uint16

const dropVerdict verdict = 0x8000

// slot is the thread's TX slot for port p: the queue's own for its peer, -1 if the thread
// has no TX queue on p.
func (b *Burst) slot(p PortID) int16 {
	if p == b.Peer {
		return b.peerSlot
	}
	if int(p) < len(b.txOf) {
		return b.txOf[p]
	}
	return -1
}

// perFrame turns an earlier SendAll into per-frame decisions before one is changed.
func (b *Burst) perFrame() {
	if b.all != 0 {
		v := b.verdict[:len(b.Frames)]
		for i := range v {
			v[i] = b.all
		}
		b.all = 0
	}
}

// Send sends frame i out of port p, on this thread's TX queue for p. A port the thread
// has no TX queue on drops the frame (DropNoTxQueue).
func (b *Burst) Send(i int, p PortID) {
	b.perFrame()
	b.verdict[i] = sendTo(b.slot(p))
}

// SendAll sends every frame of the burst out of port p. It replaces earlier decisions;
// later per-frame calls override it for their frame.
func (b *Burst) SendAll(p PortID) {
	b.all = sendTo(b.slot(p))
}

// Drop frees frame i, counting it under reason r.
func (b *Burst) Drop(i int, r DropReason) {
	b.perFrame()
	b.verdict[i] = dropVerdict | verdict(r)
}

// ToKernel hands frame i to the kernel exception path of the RX port (Port.Kernel). When
// the port has none, the frame is dropped and counted under reason r.
func (b *Burst) ToKernel(i int, r DropReason) {
	b.perFrame()
	if b.kernel < 0 {
		b.verdict[i] = dropVerdict | verdict(r)
		return
	}
	b.verdict[i] = verdict(b.kernel) + 1
}

// HasKernel reports whether the RX port has a kernel exception path.
func (b *Burst) HasKernel() bool { return b.kernel >= 0 }

func sendTo(slot int16) verdict {
	if slot < 0 {
		return dropVerdict | verdict(DropNoTxQueue)
	}
	return verdict(slot) + 1
}

// swapMACs exchanges the destination and source MAC addresses of an Ethernet frame.
// Frames shorter than the two addresses are left alone.
func swapMACs(f []byte) {
	if len(f) < 12 {
		return
	}
	var tmp [6]byte
	copy(tmp[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], tmp[:])
}

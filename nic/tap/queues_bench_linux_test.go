package tap

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
)

// The TAP queue measurement (BENCHMARKS.md, "The TAP: queues and syscalls"): what one
// write(2) or read(2) per frame costs on a single-queue TAP, and what IFF_MULTI_QUEUE (one
// descriptor per thread) and IFF_NAPI change, each configuration run for benchDuration in
// one process, so that the figures compare as ratios. Set UIOD_BENCH_TAP=1 to run it.
const benchDuration = 1500 * time.Millisecond

// benchFrame is a 60-byte IPv4 UDP frame to an address that is not the interface's (the
// kernel drops it as PACKET_OTHERHOST after the TAP's receive path, so that the figures
// are the TAP's and not the IP stack's); sport varies the flow, for the multi-queue TAP's
// queue choice.
func benchFrame(sport uint16) []byte {
	f := make([]byte, 60)
	copy(f, []byte{2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 1, 8, 0})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 46)
	copy(ip[12:], []byte{10, 99, 0, 1, 10, 99, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], 9)
	binary.BigEndian.PutUint16(ip[24:], 26)
	return f
}

// openQueues opens n descriptors on TAP name (IFF_MULTI_QUEUE when n > 1, and extra flags)
// in the calling thread's namespace.
func openQueues(name string, n int, extra uint16) ([]int, error) {
	flags := uint16(unix.IFF_TAP|unix.IFF_NO_PI) | extra
	if n > 1 {
		flags |= unix.IFF_MULTI_QUEUE
	}
	var fds []int
	for range n {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, err
		}
		fds = append(fds, fd)
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			closeAll(fds)
			return nil, err
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("TUNSETIFF %s flags %#x: %w", name, flags, err)
		}
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// cpuTime is the process's user and system time.
func cpuTime(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchResult is one configuration's run.
type benchResult struct {
	name             string
	frames, syscalls uint64
	wall, cpu        time.Duration
}

func (r benchResult) rate() float64 { return float64(r.frames) / r.wall.Seconds() }

// runWriters writes benchFrame on every fd from its own goroutine for benchDuration, one
// write(2) per frame.
func runWriters(t *testing.T, name string, fds []int) benchResult {
	var frames atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	c0, t0 := cpuTime(t), time.Now()
	for i, fd := range fds {
		wg.Go(func() {
			f, n := benchFrame(uint16(1000+i)), uint64(0)
			for !stop.Load() {
				for range 256 {
					if _, err := unix.Write(fd, f); err != nil {
						t.Errorf("write: %v", err)
						stop.Store(true)
						break
					}
				}
				n += 256
			}
			frames.Add(n)
		})
	}
	time.Sleep(benchDuration)
	stop.Store(true)
	wg.Wait()
	n := frames.Load()
	return benchResult{name, n, n, time.Since(t0), cpuTime(t) - c0}
}

// runPortTx sends benchFrame through an open Port from threads goroutines, each its own
// TX queue (TxBurst of 32), for benchDuration: today's path, one writer goroutine and one
// descriptor for every queue. Frames counts what the writer wrote.
func runPortTx(t *testing.T, p *Port, threads int) benchResult {
	var stop atomic.Bool
	var wg sync.WaitGroup
	tx0 := p.Stats().TxPackets
	c0, t0 := cpuTime(t), time.Now()
	for q := range threads {
		wg.Go(func() {
			pool, err := nic.NewMempool(&nic.HeapDMA{}, 64, 2048)
			if err != nil {
				t.Error(err)
				return
			}
			defer pool.Close()
			f := benchFrame(uint16(2000 + q))
			bufs := make([]*nic.Buf, 32)
			for !stop.Load() {
				for i := range bufs {
					bufs[i] = pool.Get()
					bufs[i].SetLen(copy(bufs[i].Data(), f))
				}
				n := p.TxBurst(q, bufs)
				for _, b := range bufs[n:] {
					b.Free()
				}
				if n < len(bufs) {
					time.Sleep(20 * time.Microsecond) // the ring is full: what a poll thread does next
				}
			}
		})
	}
	time.Sleep(benchDuration)
	stop.Store(true)
	wg.Wait()
	wall, cpu := time.Since(t0), cpuTime(t)-c0
	n := p.Stats().TxPackets - tx0
	return benchResult{fmt.Sprintf("port today: %d TxBurst threads, 1 writer, 1 fd", threads), n, n, wall, cpu}
}

// runReaders has the kernel transmit benchFrame on the TAP (an AF_PACKET socket, one
// write(2) a frame, 64 flows so that a multi-queue TAP spreads them) and reads every fd from its
// own goroutine, read(2) until EAGAIN, then poll(2), for benchDuration. Syscalls counts
// reads and polls; frames, what was read.
func runReaders(t *testing.T, name, ns, ifname string, fds []int) (benchResult, uint64) {
	var sent atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sk int
	if err := testutil.InNetns(ns, func() (err error) {
		sk, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sk)
	ifi, err := ifindexIn(ns, ifname)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(sk, &unix.SockaddrLinklayer{Ifindex: ifi}); err != nil {
		t.Fatal(err)
	}
	var frames, calls atomic.Uint64
	c0, t0 := cpuTime(t), time.Now()
	wg.Go(func() { // the kernel's side: frames over 64 flows, one write(2) each
		var bufs [64][]byte
		for i := range bufs {
			bufs[i] = benchFrame(uint16(3000 + i))
		}
		for n := uint64(0); !stop.Load(); n++ {
			if _, err := unix.Write(sk, bufs[n%64]); err != nil && err != unix.ENOBUFS && err != unix.EAGAIN {
				t.Errorf("AF_PACKET write: %v", err)
				return
			}
			sent.Add(1)
		}
	})
	for _, fd := range fds {
		wg.Go(func() {
			buf := make([]byte, 2048)
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			var n, c uint64
			for !stop.Load() {
				c++
				if _, err := unix.Read(fd, buf); err == nil {
					n++
					continue
				}
				c++
				unix.Poll(pfd, 10)
			}
			frames.Add(n)
			calls.Add(c)
		})
	}
	time.Sleep(benchDuration)
	stop.Store(true)
	wg.Wait()
	return benchResult{name, frames.Load(), calls.Load(), time.Since(t0), cpuTime(t) - c0}, sent.Load()
}

// ifindexIn is interface name's index in namespace ns.
func ifindexIn(ns, name string) (int, error) {
	var idx int
	err := testutil.InNetns(ns, func() error {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
			return err
		}
		idx = int(ifr.Uint32())
		return nil
	})
	return idx, err
}

// TestBenchTAPQueues is the measurement; it logs one table (frames/s, syscalls and CPU
// per frame, and each row's rate over the first row's of its direction).
func TestBenchTAPQueues(t *testing.T) {
	if os.Getenv("UIOD_BENCH_TAP") == "" {
		t.Skip("set UIOD_BENCH_TAP=1 to measure the TAP's queues")
	}
	ns := testutil.TAPNetns(t, "uiod-tapbench")
	open := func(name string, n int, extra uint16) []int {
		var fds []int
		if err := testutil.InNetns(ns, func() (err error) { fds, err = openQueues(name, n, extra); return err }); err != nil {
			t.Fatal(err)
		}
		testutil.IPIn(t, ns, "link", "set", name, "up")
		return fds
	}
	// Each round runs every configuration once, in turn, so that a busy spell of the
	// machine hits them alike; the table has the medians over the rounds, and each
	// row's ratio is the median of its per-round rate over the round's first row's.
	const rounds = 5
	txNames := []string{"1 queue, 1 writer", "1 queue IFF_NAPI, 1 writer", "2 queues (IFF_MULTI_QUEUE), 2 writers", "port today: 2 TxBurst threads, 1 writer, 1 fd"}
	rxNames := []string{"1 queue, 1 reader", "2 queues (IFF_MULTI_QUEUE), 2 readers"}
	tx := make([][]benchResult, len(txNames))
	rx := make([][]benchResult, len(rxNames))
	read := make([][]float64, len(rxNames)) // share of the frames offered that were read
	for range rounds {
		for i, extra := range []uint16{0, unix.IFF_NAPI, 0} {
			fds := open("uiodb0", 1+i/2, extra)
			tx[i] = append(tx[i], runWriters(t, txNames[i], fds))
			closeAll(fds)
		}
		var p *Port
		if err := testutil.InNetns(ns, func() (err error) { p, err = Open(Config{Name: "uiodb1", TxQueues: 2, TxRing: 1024}); return err }); err != nil {
			t.Fatal(err)
		}
		tx[3] = append(tx[3], runPortTx(t, p, 2))
		p.Close()
		for i := range rxNames {
			fds := open("uiodb2", i+1, 0)
			r, sent := runReaders(t, rxNames[i], ns, "uiodb2", fds)
			rx[i], read[i] = append(rx[i], r), append(read[i], float64(r.frames)/float64(max(sent, 1)))
			closeAll(fds)
		}
	}
	var b strings.Builder
	table := func(rows [][]benchResult, names []string) {
		for i, rs := range rows {
			var rate, sys, cpu, ratio []float64
			for k, r := range rs {
				rate = append(rate, r.rate())
				sys = append(sys, float64(r.syscalls)/float64(max(r.frames, 1)))
				cpu = append(cpu, float64(r.cpu.Nanoseconds())/1e3/float64(max(r.frames, 1)))
				ratio = append(ratio, r.rate()/rows[0][k].rate())
			}
			fmt.Fprintf(&b, "%-48s %9.0f frames/s  %4.2f syscalls/frame  %5.2f µs CPU/frame  rate x%.2f (rounds: %s)\n",
				names[i], median(rate), median(sys), median(cpu), median(ratio), formatRatios(ratio))
		}
	}
	fmt.Fprintf(&b, "%d rounds of %v per configuration, medians:\n", rounds, benchDuration)
	b.WriteString("port -> kernel (write(2) per frame):\n")
	table(tx, txNames)
	b.WriteString("kernel -> port (read(2) per frame; the kernel sends from an AF_PACKET socket, one write(2) a frame, whose CPU is in the figure):\n")
	table(rx, rxNames)
	for i, name := range rxNames {
		fmt.Fprintf(&b, "%-48s read %.0f%% of the frames the kernel sent (rounds: %s)\n", name, 100*median(read[i]), formatRatios(read[i]))
	}
	t.Log("\n" + b.String())
}

// median is xs's median (xs is sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

// formatRatios lists xs to two places, in the order given.
func formatRatios(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(s, " ")
}

package vhost_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

// The DPDK benchmarks measure, with dpdk-testpmd's virtio-user as the front end, what the
// back end takes and what it costs, over fixed windows: run them with -benchtime=1x.
//
//	go test -run XXX -bench DPDK -benchtime=1x ./nic/vhost/   (root, dpdk-testpmd installed)

const window = 5 * time.Second

// procCPU is a process's user+system CPU time.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// uiodVhost starts a daemon with one vhost-user port (server mode) on sock under the
// given poll mode, reflecting, its poll thread on CPU 0.
func uiodVhost(b *testing.B, sock, mode string) *daemon.Daemon {
	cfg, err := config.Read(strings.NewReader(fmt.Sprintf(`
ports:
  - {name: vm, driver: vhost-user, socket: %s}
forward: {mode: reflect}
poll: {mode: %s, cpus: [0]}
`, sock, mode)))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(filepath.Dir(sock), "state")
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Stop() })
	return d
}

// backEnd starts the back end named backend ("uiod-MODE" or "testpmd-net_vhost", forwarding
// in beMode) on a socket in a temporary directory, then a virtio-user front end forwarding
// in feMode; exactly one of d and be is set. Everything stops when the benchmark ends.
func backEnd(b *testing.B, bin, backend, beMode, feMode string) (d *daemon.Daemon, be, fe *testpmd) {
	sock := filepath.Join(b.TempDir(), "vhost.sock")
	if mode, ok := strings.CutPrefix(backend, "uiod-"); ok {
		d = uiodVhost(b, sock, mode)
	} else {
		be = &testpmd{t: b, bin: bin, lcores: "0-1", main: "1", mode: beMode, prefix: fmt.Sprintf("uiodvhbe%d", os.Getpid()),
			vdev: "net_vhost0,iface=" + sock + ",queues=1"}
		be.start()
		b.Cleanup(be.kill)
		testutil.WaitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil })
	}
	fe = &testpmd{t: b, bin: bin, sock: sock, mode: feMode, lcores: "0-1", main: "0", prefix: fmt.Sprintf("uiodvhfe%d", os.Getpid())}
	fe.start()
	b.Cleanup(fe.kill)
	return d, be, fe
}

// BenchmarkDPDKRxRate is the rate at which the back end takes frames from virtio-user
// (testpmd txonly, 64-byte frames, bursts of 32, forwarding on CPU 1): uiod (busy, poll
// thread on CPU 0, reflecting; testpmd's txonly does not receive, so the reflected frames
// find its RX ring full and are dropped) against testpmd's own net_vhost back end (rxonly,
// forwarding on CPU 0, its main lcore on CPU 1).
func BenchmarkDPDKRxRate(b *testing.B) {
	bin := dpdkBin(b)
	for _, backend := range []string{"uiod-busy", "testpmd-net_vhost"} {
		b.Run(backend, func(b *testing.B) {
			d, be, fe := backEnd(b, bin, backend, "rxonly", "txonly")
			rx := func() uint64 {
				if d != nil {
					return d.Status().Ports[0].Stats.RxPackets
				}
				return lastRx(be.log.String())
			}
			if !testutil.WaitFor(30*time.Second, func() bool { return rx() > 0 }) {
				b.Fatalf("no frames; front end:\n%s", fe.log)
			}
			time.Sleep(time.Second)
			r0, t0 := rx(), time.Now()
			time.Sleep(window)
			r1, t1 := rx(), time.Now()
			if be != nil { // testpmd prints its counters once a second: a window of whole prints
				r1 = lastRx(be.log.String())
			}
			b.ReportMetric(float64(r1-r0)/t1.Sub(t0).Seconds(), "frames/s")
		})
	}
}

// lastRx is the last "RX-packets: N" of testpmd's periodic statistics.
func lastRx(log string) uint64 {
	i := strings.LastIndex(log, "RX-packets:")
	if i < 0 {
		return 0
	}
	f := strings.Fields(log[i+len("RX-packets:"):])
	n, _ := strconv.ParseUint(f[0], 10, 64)
	return n
}

// BenchmarkDPDKIdleCPU is the back end's CPU with a connected virtio-user front end
// (testpmd io, polling on CPU 1) and no traffic: uiod's poll thread under adaptive and
// busy, and testpmd's net_vhost back end (its whole process).
func BenchmarkDPDKIdleCPU(b *testing.B) {
	bin := dpdkBin(b)
	for _, backend := range []string{"uiod-adaptive", "uiod-busy", "testpmd-net_vhost"} {
		b.Run(backend, func(b *testing.B) {
			d, be, fe := backEnd(b, bin, backend, "io", "io")
			if d != nil && !testutil.WaitFor(30*time.Second, func() bool { return d.Status().Ports[0].LinkUp }) {
				b.Fatalf("link never up; front end:\n%s", fe.log)
			}
			time.Sleep(2 * time.Second)
			var c0 time.Duration
			var th0 daemon.ThreadStatus
			if d != nil {
				th0 = d.Status().Threads[0]
			} else {
				c0 = procCPU(b, be.cmd.Process.Pid)
			}
			t0 := time.Now()
			time.Sleep(window)
			wall := time.Since(t0)
			var cpu time.Duration
			if d != nil {
				th1 := d.Status().Threads[0]
				cpu = time.Duration((th1.CPUSeconds - th0.CPUSeconds) * 1e9)
				wall = time.Duration((th1.WallSeconds - th0.WallSeconds) * 1e9)
				b.ReportMetric(float64(th1.WakeTimeout-th0.WakeTimeout)/wall.Seconds(), "timeouts/s")
				b.ReportMetric(float64(th1.WakeInterrupt-th0.WakeInterrupt)/wall.Seconds(), "kicks/s")
			} else {
				cpu = procCPU(b, be.cmd.Process.Pid) - c0
			}
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu%")
		})
	}
}

// BenchmarkDPDKRoundTrip is the round trip of one frame at a time from a model NIC's wire
// through uiod's l2fwd to virtio-user (testpmd macswap, forwarding on CPU 1) and back, one
// probe every 2 ms, under busy and adaptive: p50, p99 and the poll thread's CPU.
func BenchmarkDPDKRoundTrip(b *testing.B) {
	bin := dpdkBin(b)
	for _, mode := range []string{config.PollBusy, config.PollAdaptive} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			sock := filepath.Join(dir, "vhost.sock")
			name := fmt.Sprintf("vhrtt%d%s", os.Getpid(), mode)
			cfg := pairedConfig(b, dir, name, sock, config.VhostServer, "mode: "+mode+", cpus: [0]")
			type arrival struct {
				seq uint32
				at  time.Time
			}
			back := make(chan arrival, 64)
			w, err := wire.Open("pair:" + name)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			w.SetHandler(func(f []byte, _ int64) {
				if len(f) >= 64 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 {
					select {
					case back <- arrival{binary.BigEndian.Uint32(f[60:]), time.Now()}:
					default:
					}
				}
			})
			d := daemon.New(cfg, daemon.Options{})
			if err := d.Start(); err != nil {
				b.Fatal(err)
			}
			defer d.Stop()
			fe := &testpmd{t: b, bin: bin, sock: sock, mode: "macswap", lcores: "0-1", main: "0", prefix: fmt.Sprintf("uiodvhfe%d", os.Getpid())}
			fe.start()
			defer fe.kill()
			if !testutil.WaitFor(30*time.Second, func() bool { return d.Status().Ports[1].LinkUp }) {
				b.Fatalf("link never up:\n%s", fe.log)
			}
			var seq uint32
			// probe sends one frame and waits for it (a late echo of an earlier one is
			// skipped by its sequence number).
			probe := func() (time.Duration, bool) {
				seq++
				t0 := time.Now()
				w.Send(echoFrame(seq))
				timeout := time.After(100 * time.Millisecond)
				for {
					select {
					case a := <-back:
						if a.seq == seq {
							return a.at.Sub(t0), true
						}
					case <-timeout:
						return 0, false
					}
				}
			}
			for range 200 { // warm up: testpmd's RX ring posted, the path hot
				probe()
				time.Sleep(time.Millisecond)
			}
			th0 := d.Status().Threads[0]
			var rtts []time.Duration
			lost := 0
			for range 2000 {
				if rtt, ok := probe(); ok {
					rtts = append(rtts, rtt)
				} else {
					lost++
				}
				time.Sleep(2 * time.Millisecond)
			}
			th1 := d.Status().Threads[0]
			if len(rtts) == 0 {
				b.Fatal("no probe came back")
			}
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(lost), "lost")
			b.ReportMetric(100*(th1.CPUSeconds-th0.CPUSeconds)/(th1.WallSeconds-th0.WallSeconds), "cpu%")
		})
	}
}

package dataplane

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/benchstat"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"golang.org/x/sys/unix"
)

// benchGap is the probe rate of the wake-up and CPU benchmarks: one frame per 400 µs
// (2.5 kpps), the rate of the runtime measurements in docs/design.md §12.
const benchGap = 400 * time.Microsecond

// BenchmarkPolicies measures, for each idle policy in one run, the wake-up latency (frame
// injected → frame handed to TX on the polling thread) and the polling thread's CPU share
// at one frame per 400 µs. b.N is the number of frames (use -benchtime=Nx). Metrics:
// p50/p90/p99/max latency in ns, cpu% of the polling thread, and interrupt wake-ups per
// frame. With UIOD_CFLOOR pointing at bench/cfloor's binary, the sub-benchmark "cfloor"
// runs the C floor (eventfd → epoll_wait) with the same count and gap in the same run.
//
//	gcc -O2 -pthread -o /tmp/floor bench/cfloor/floor.c
//	UIOD_CFLOOR=/tmp/floor go test -run '^$' -bench Policies -benchtime 5000x ./dataplane
func BenchmarkPolicies(b *testing.B) {
	us := time.Microsecond
	adaptive := idle.DefaultPolicy()
	blocking, threaded, auto, zero := adaptive, adaptive, adaptive, adaptive
	zero.IdleThreshold = 0 // sleep at the first empty poll
	blocking.WaitMode = irq.WaitBlocking
	threaded.Delivery = idle.Threaded
	auto.Auto = true
	sleep := func(min, max time.Duration) idle.PolicyConfig {
		return idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: min, SleepMax: max}
	}
	// Threshold 1 ns: every frame arrives by interrupt, which isolates the wake-up path.
	wake := func(p idle.PolicyConfig) idle.PolicyConfig { p.IdleThreshold = time.Nanosecond; return p }
	cases := []struct {
		name   string
		policy idle.PolicyConfig
	}{
		{"wake/adaptive-inline-raw", wake(adaptive)},
		{"wake/adaptive-inline-blocking", wake(blocking)},
		{"wake/adaptive-threaded", wake(threaded)},
		{"wake/busy", idle.PolicyConfig{Mode: idle.Busy}},
		{"cpu/busy", idle.PolicyConfig{Mode: idle.Busy}},
		{"cpu/adaptive-300us", adaptive},
		{"cpu/adaptive-auto", auto},
		{"cpu/adaptive-0", zero},
		{"cpu/sleep-5-10us", sleep(5*us, 10*us)},
		{"cpu/sleep-20-50us", sleep(20*us, 50*us)},
		{"cpu/sleep-50-100us", sleep(50*us, 100*us)},
		{"cpu/sleep-100-200us", sleep(100*us, 200*us)},
		{"cpu/sleep-1000-1100us", sleep(1000*us, 1100*us)},
	}
	if path := os.Getenv("UIOD_CFLOOR"); path != "" {
		b.Run("wake/cfloor", func(b *testing.B) { benchCFloor(b, path) })
	}
	prev := runtime.GOMAXPROCS(ProcsFor(1))
	defer runtime.GOMAXPROCS(prev)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchPaced(b, c.policy, constantGap(benchGap)) })
	}
	b.Run("cpu/adaptive-300us-idle", func(b *testing.B) { benchIdle(b, idle.DefaultPolicy()) })
	for _, c := range cases[:4] {
		b.Run("model/"+c.name, func(b *testing.B) { benchModel(b, c.policy, benchGap) })
	}
}

// benchModel is benchPaced through the 82599 model and the real ixgbe driver: frames go
// onto port 0's wire and the latency is taken when port 1 puts them on its wire (wire
// in → NIC DMA → MSI-X → poll thread → TX doorbell → wire out).
func benchModel(b *testing.B, policy idle.PolicyConfig, gap time.Duration) {
	pollCPU, senderCPU := benchCPUs()
	r := newModelRig(b, pollCPU, policy, b.N)
	if err := r.dp.Start(); err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setupSender(b, senderCPU)
	before := r.dp.Threads()[0]
	b.ResetTimer()
	sendPaced(b.N, func(int) time.Duration { return gap }, func(i int) { r.send(0, uint64(i)) })
	awaitCount(&r.count, b.N)
	b.StopTimer()
	r.dp.Stop()
	reportPaced(b, r.lat, before, r.dp.Threads()[0])
}

// benchCPUs returns the CPUs for the polling thread and the traffic sender: the last two,
// as a deployment gives the poll loop a core of its own; -1, -1 with UIOD_BENCH_PIN=0 or
// on a single CPU.
func benchCPUs() (poll, sender int) {
	n := runtime.NumCPU()
	if n < 2 || os.Getenv("UIOD_BENCH_PIN") == "0" {
		return -1, -1
	}
	return n - 1, n - 2
}

// setupSender prepares the calling (locked) thread to send paced traffic: pinned to cpu
// if ≥ 0, and with a 1 ns timer slack for accurate gaps.
func setupSender(b *testing.B, cpu int) {
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { // give the thread back unpinned
			var all unix.CPUSet
			for i := 0; i < runtime.NumCPU(); i++ {
				all.Set(i)
			}
			unix.SchedSetaffinity(0, &all)
		})
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// constantGap paces frames at a fixed gap.
func constantGap(gap time.Duration) func(int, *rand.Rand) time.Duration {
	return func(int, *rand.Rand) time.Duration { return gap }
}

// benchPaced sends b.N frames, frame i gap(i) after the one before, through a reflect
// dataplane and reports latency percentiles and the polling thread's CPU share.
func benchPaced(b *testing.B, policy idle.PolicyConfig, gap func(int, *rand.Rand) time.Duration) {
	rec, before, after := pacedReflect(b, policy, b.N, gap, true)
	reportPaced(b, rec.lat, before, after)
}

// pacedReflect sends n frames, frame i gap(i) after the one before, from this thread
// (locked, and pinned as benchCPUs says) through a fresh reflect dataplane under policy,
// and waits up to 10 s for them to be handed to TX. It returns their recorder and the
// polling thread's stats before the first frame and after Stop. With timed, the
// benchmark's timer covers the frames and the wait.
func pacedReflect(b *testing.B, policy idle.PolicyConfig, n int, gap func(int, *rand.Rand) time.Duration, timed bool) (rec *recorder, before, after ThreadStats) {
	dma := &goDMA{}
	port := newFakePort(b, dma, 1, 1, true)
	rec = newRecorder(n)
	port.onTx = rec.hook(0)
	pollCPU, senderCPU := benchCPUs()
	dp, err := New(Config{App: Reflect, Policy: policy, Threads: []Thread{{CPU: pollCPU, Queues: []Queue{{RxPort: port}}}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		b.Fatal(err)
	}
	defer dp.Stop()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	setupSender(b, senderCPU)
	var buf [frameLen]byte
	before = dp.Threads()[0]
	rng := rand.New(rand.NewPCG(5, 6))
	if timed {
		b.ResetTimer()
	}
	sendPaced(n, func(i int) time.Duration { return gap(i, rng) }, func(i int) {
		port.inject(0, makeFrame(buf[:], port.mac, port.mac, uint64(i), idle.Now()))
	})
	awaitCount(&rec.count, n)
	if timed {
		b.StopTimer()
	}
	dp.Stop()
	return rec, before, dp.Threads()[0]
}

// sendPaced calls send(i) for i below n, each gap(i) after the one before.
func sendPaced(n int, gap func(i int) time.Duration, send func(i int)) {
	next := time.Now()
	for i := 0; i < n; i++ {
		next = next.Add(gap(i))
		pause(time.Until(next))
		send(i)
	}
}

// awaitCount waits until count reaches n or 10 s pass: a lost frame shows in the report.
func awaitCount(count *atomic.Int64, n int) {
	testutil.WaitFor(10*time.Second, func() bool { return count.Load() >= int64(n) })
}

// reportPaced reports latency percentiles (0 = frame lost), the thread's CPU share and
// interrupt wake-ups per frame.
func reportPaced(b *testing.B, latencies []int64, before, after ThreadStats) {
	lat := slices.Clone(latencies)
	slices.Sort(lat)
	lost := 0
	for lost < len(lat) && lat[lost] == 0 {
		lost++
	}
	lat = lat[lost:]
	if len(lat) == 0 {
		b.Fatal("no frame came back")
	}
	pct := func(p int) float64 { return float64(pctOf(lat, p)) }
	b.ReportMetric(pct(50), "p50-ns")
	b.ReportMetric(pct(90), "p90-ns")
	b.ReportMetric(pct(99), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
	reportCPU(b, before, after)
	b.ReportMetric(float64(after.Idle.WakeInterrupt-before.Idle.WakeInterrupt)/float64(b.N), "irqwakes/frame")
	if lost > 0 {
		b.ReportMetric(float64(lost), "lost")
	}
}

// benchIdle reports the polling thread's CPU share with no traffic at all, over b.N
// wait_timeouts.
func benchIdle(b *testing.B, policy idle.PolicyConfig) {
	dma := &goDMA{}
	port := newFakePort(b, dma, 1, 1, true)
	dp, err := New(Config{App: Reflect, Policy: policy, Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: port}}}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		b.Fatal(err)
	}
	defer dp.Stop()
	time.Sleep(20 * time.Millisecond)
	before := dp.Threads()[0]
	b.ResetTimer()
	time.Sleep(time.Duration(b.N) * dp.cfg.Policy.WithDefaults().WaitTimeout / 10)
	b.StopTimer()
	dp.Stop()
	after := dp.Threads()[0]
	reportCPU(b, before, after)
}

// benchCFloor runs the C floor program with b.N wake-ups at benchGap, pinned like the Go
// threads, and reports its percentiles.
func benchCFloor(b *testing.B, path string) {
	args := []string{strconv.Itoa(b.N), strconv.Itoa(int(benchGap / time.Microsecond))}
	if poll, sender := benchCPUs(); poll >= 0 {
		args = append(args, strconv.Itoa(poll), strconv.Itoa(sender))
	}
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		for _, f := range strings.Fields(sc.Text()) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || !strings.HasSuffix(k, "_ns") {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("floor output %q: %v", f, err)
			}
			b.ReportMetric(n, strings.TrimSuffix(k, "_ns")+"-ns")
		}
	}
}

// reportCPU reports the polling thread's CPU share between before and after.
func reportCPU(b *testing.B, before, after ThreadStats) {
	if wall := after.WallTime - before.WallTime; wall > 0 {
		b.ReportMetric(100*float64(after.CPUTime-before.CPUTime)/float64(wall), "cpu%")
	}
}

// pctOf is the p-th percentile of the sorted latencies lat (ns), 0 for none.
func pctOf(lat []int64, p int) time.Duration { return time.Duration(benchstat.Percentile(lat, p)) }

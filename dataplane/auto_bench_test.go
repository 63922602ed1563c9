package dataplane

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
)

var autoRounds = flag.Int("auto.rounds", 4, "BenchmarkAutoThreshold: rounds per b.N (each runs every pattern under every policy once)")

// autoPattern is one of issue 8's traffic patterns, sent in chunks of frames.
type autoPattern struct {
	name   string
	frames int           // frames per chunk
	tail   time.Duration // silence after a chunk's last frame, before the thread stops
	gap    func(i int, rng *rand.Rand) time.Duration
}

// autoPatterns are issue 8's patterns. Every chunk lasts about a second.
var autoPatterns = []autoPattern{
	{"2.5kpps", 2500, 400 * time.Microsecond, constantGap(400 * time.Microsecond)},
	{"50kpps", 50000, 20 * time.Microsecond, constantGap(20 * time.Microsecond)},
	// 10 ms at 100 kpps (1000 frames), then 90 ms silent: ten cycles a chunk, each one
	// starting with its silence; the chunk's tail is the last burst's silence.
	{"bursts", 10000, 90 * time.Millisecond, func(i int, _ *rand.Rand) time.Duration {
		if i%1000 == 0 {
			return 90 * time.Millisecond
		}
		return 10 * time.Microsecond
	}},
	{"poisson-10kpps", 10000, 100 * time.Microsecond, func(_ int, rng *rand.Rand) time.Duration {
		return time.Duration(rng.ExpFloat64() * float64(100*time.Microsecond))
	}},
}

// autoPolicies are the policies issue 8 compares.
var autoPolicies = []struct {
	name   string
	policy irq.PolicyConfig
}{
	{"busy", irq.PolicyConfig{Mode: irq.Busy}},
	{"fixed-300us", irq.PolicyConfig{}},
	{"auto", irq.PolicyConfig{Auto: true}},
}

// autoCell accumulates one pattern × policy over all rounds.
type autoCell struct {
	lat         []int64 // latencies of the frames that came back (ns)
	lost        int     // frames not injected (ring full) or not seen back
	cpu, wall   time.Duration
	irqWakes    uint64
	sleeps      uint64
	threshold   time.Duration // auto's threshold at the end of the last chunk
	gapEstimate time.Duration
}

func (c *autoCell) pct(p int) time.Duration {
	if len(c.lat) == 0 {
		return 0
	}
	return time.Duration(c.lat[(len(c.lat)-1)*p/100])
}

func (c *autoCell) cpuPct() float64 {
	if c.wall <= 0 {
		return 0
	}
	return 100 * float64(c.cpu) / float64(c.wall)
}

// BenchmarkAutoThreshold compares busy polling, the fixed 300 µs threshold and
// idle_threshold: auto (issue 8) on the four traffic patterns in one run, and prints the
// table and the targets as ratios. Machine noise changes over time, so the run is
// interleaved: each of -auto.rounds rounds (per b.N) runs a chunk of about a second of
// every pattern under every policy, in an order that rotates from round to round, and
// each table cell aggregates its chunks. Use one iteration:
//
//	go test -run '^$' -bench '^BenchmarkAutoThreshold$' -benchtime 1x ./dataplane -args -auto.rounds 4
func BenchmarkAutoThreshold(b *testing.B) {
	prev := runtime.GOMAXPROCS(irq.ProcsFor(1))
	defer runtime.GOMAXPROCS(prev)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pollCPU, senderCPU := benchCPUs()
	setupSender(b, senderCPU)

	cells := make([][]autoCell, len(autoPatterns))
	for i := range cells {
		cells[i] = make([]autoCell, len(autoPolicies))
	}
	rounds := *autoRounds * b.N
	rng := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for pi, pat := range autoPatterns {
			for k := range autoPolicies {
				j := (k + r + pi) % len(autoPolicies)
				autoChunk(b, &cells[pi][j], autoPolicies[j].policy, pat, pollCPU, rng)
			}
		}
	}
	b.StopTimer()
	for pi := range cells {
		for j := range cells[pi] {
			slices.Sort(cells[pi][j].lat)
		}
	}
	// Printed, not logged: the testing package cuts a benchmark's log after ten lines.
	fmt.Print(autoTable(cells, rounds))
	for _, c := range autoChecks(cells) {
		b.ReportMetric(c.ratio, c.metric)
	}
}

// autoChunk sends one chunk of pat through a fresh reflect dataplane under policy and
// adds the outcome to c.
func autoChunk(b *testing.B, c *autoCell, policy irq.PolicyConfig, pat autoPattern, pollCPU int, rng *rand.Rand) {
	dma := &goDMA{}
	port := newFakePort(b, dma, 1, 1, true)
	rec := newRecorder(pat.frames)
	port.onTx = rec.hook(0)
	dp, err := New(Config{App: Reflect, Policy: policy, Threads: []Thread{{CPU: pollCPU, Queues: []Queue{{RxPort: port}}}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		b.Fatal(err)
	}
	var buf [frameLen]byte
	sent := int64(0)
	next := time.Now()
	for i := 0; i < pat.frames; i++ {
		next = next.Add(pat.gap(i, rng))
		pace(next)
		if port.inject(0, makeFrame(buf[:], port.mac, port.mac, uint64(i), irq.Now())) {
			sent++
		}
	}
	pace(time.Now().Add(pat.tail))
	deadline := time.Now().Add(2 * time.Second)
	for rec.count.Load() < sent && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	dp.Stop()
	st := dp.Threads()[0]
	port.Close()
	for _, l := range rec.lat {
		if l == 0 {
			c.lost++
			continue
		}
		c.lat = append(c.lat, l)
	}
	c.cpu += st.CPUTime
	c.wall += st.WallTime
	c.irqWakes += st.Idle.WakeInterrupt
	c.sleeps += st.Idle.Sleeps
	c.threshold, c.gapEstimate = st.Idle.Threshold, st.Idle.GapEstimate
}

// pace waits until t: a nanosleep for all but the last 60 µs, which it spins, so that
// gaps of 10 and 20 µs come out as sent.
func pace(t time.Time) {
	if d := time.Until(t) - 60*time.Microsecond; d > 0 {
		pause(d)
	}
	for time.Now().Before(t) {
	}
}

// autoCheck is one of issue 8's targets as a ratio.
type autoCheck struct {
	what   string
	metric string
	ratio  float64
	limit  float64
}

func (c autoCheck) ok() bool { return c.ratio <= c.limit }

func autoChecks(cells [][]autoCell) []autoCheck {
	const busy, fixed, auto = 0, 1, 2
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	var cs []autoCheck
	for pi, pat := range autoPatterns {
		c := cells[pi]
		p := func(j, q int) float64 { return float64(c[j].pct(q)) }
		switch pat.name {
		case "2.5kpps":
			cs = append(cs,
				autoCheck{"2.5kpps: auto CPU % (≤ 5)", "2.5k-auto-cpu%", c[auto].cpuPct(), 5},
				autoCheck{"2.5kpps: auto/fixed p50 (≤ 1.2)", "2.5k-p50-auto/fixed", ratio(p(auto, 50), p(fixed, 50)), 1.2},
				autoCheck{"2.5kpps: auto/fixed p99 (≤ 1.2)", "2.5k-p99-auto/fixed", ratio(p(auto, 99), p(fixed, 99)), 1.2})
		case "50kpps":
			cs = append(cs,
				autoCheck{"50kpps: auto/busy p99 (≤ 1.2)", "50k-p99-auto/busy", ratio(p(auto, 99), p(busy, 99)), 1.2})
		default:
			short := strings.TrimSuffix(pat.name, "-10kpps")
			cs = append(cs,
				autoCheck{pat.name + ": auto/fixed CPU (< 1)", short + "-cpu-auto/fixed", ratio(c[auto].cpuPct(), c[fixed].cpuPct()), 0.999},
				autoCheck{pat.name + ": auto/fixed p99 (≤ 1.3)", short + "-p99-auto/fixed", ratio(p(auto, 99), p(fixed, 99)), 1.3})
		}
	}
	return cs
}

// autoTable formats the cells and the target checks.
func autoTable(cells [][]autoCell, rounds int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "issue 8, %d interleaved rounds; latency = frame injected → handed to TX on the poll thread\n", rounds)
	fmt.Fprintf(&s, "%-15s %-12s %7s %9s %9s %9s %9s %9s %6s\n", "pattern", "policy", "cpu%", "p50", "p99", "max", "irqwakes", "frames", "lost")
	for pi, pat := range autoPatterns {
		for j, pol := range autoPolicies {
			c := &cells[pi][j]
			max := time.Duration(0)
			if len(c.lat) > 0 {
				max = time.Duration(c.lat[len(c.lat)-1])
			}
			fmt.Fprintf(&s, "%-15s %-12s %7.2f %9s %9s %9s %9d %9d %6d\n", pat.name, pol.name, c.cpuPct(),
				roundDur(c.pct(50)), roundDur(c.pct(99)), roundDur(max), c.irqWakes, len(c.lat), c.lost)
		}
	}
	s.WriteString("targets:\n")
	for _, c := range autoChecks(cells) {
		verdict := "ok"
		if !c.ok() {
			verdict = "MISSED"
		}
		fmt.Fprintf(&s, "  %-36s %7.3f  %s\n", c.what, c.ratio, verdict)
	}
	return s.String()
}

// roundDur keeps three significant digits.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}

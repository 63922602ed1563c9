package dataplane

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/benchstat"
	"github.com/uiod/uiod/irq"
)

var (
	wakeRounds  = flag.Int("wake.rounds", 24, "BenchmarkWakeRounds: interleaved rounds")
	wakeChunk   = flag.Int("wake.chunk", 200, "BenchmarkWakeRounds: frames per variant per round at 400 µs")
	wakeSilence = flag.Int("wake.silence", 4, "BenchmarkWakeRounds: frames per variant per round after 90 or 200 ms of silence (0: none)")
)

// The gaps of the after-silence set: a frame silenceGap after the last one finds the
// thread in deep idle (longer than idle.DeepIdleAfter), one rawSilenceGap after it still
// in its raw wait.
const (
	silenceGap    = 200 * time.Millisecond
	rawSilenceGap = 90 * time.Millisecond
)

// wakeVariant is one contestant of BenchmarkWakeRounds: the C floor (floor set) or a Go
// policy, sent frames gap apart.
type wakeVariant struct {
	name   string
	floor  bool
	policy idle.PolicyConfig
	gap    time.Duration
	set    string // variants are compared within their set
}

// BenchmarkWakeRounds measures the wake-up latency of the C floor (bench/cfloor, path in
// UIOD_CFLOOR) and of each Go wake-up variant in interleaved rounds: every round runs a
// chunk of frames through every variant, in a fresh random order, so that a stall of the
// machine lands on one chunk of one variant rather than on a whole variant. It pools the
// rounds per variant and reports p50/p99 and their ratios to the floor (and threaded to
// inline) with 90 % bootstrap intervals over the rounds. A second set sends frames to the
// default policy 200 ms apart, which finds it in deep idle (a blocking wait), and 90 ms
// apart, which finds it still in its raw wait. UIOD_BENCH_PIN=0 leaves the threads
// unpinned.
// Run it with -benchtime 1x (bench/wake.sh does).
func BenchmarkWakeRounds(b *testing.B) {
	floor := os.Getenv("UIOD_CFLOOR")
	if floor == "" {
		b.Skip("UIOD_CFLOOR must name bench/cfloor's binary (bench/wake.sh builds it)")
	}
	adaptive := idle.DefaultPolicy()
	wake := func(p idle.PolicyConfig) idle.PolicyConfig { p.IdleThreshold = time.Nanosecond; return p }
	blocking, threaded := wake(adaptive), wake(adaptive)
	blocking.WaitMode = irq.WaitBlocking
	threaded.Delivery = idle.Threaded
	variants := []wakeVariant{
		{name: "cfloor", floor: true, gap: benchGap, set: "400us"},
		{name: "adaptive-inline-raw", policy: wake(adaptive), gap: benchGap, set: "400us"},
		{name: "adaptive-300us", policy: adaptive, gap: benchGap, set: "400us"},
		{name: "adaptive-inline-blocking", policy: blocking, gap: benchGap, set: "400us"},
		{name: "adaptive-threaded", policy: threaded, gap: benchGap, set: "400us"},
		{name: "busy", policy: idle.PolicyConfig{Mode: idle.Busy}, gap: benchGap, set: "400us"},
	}
	if *wakeSilence > 0 {
		variants = append(variants,
			wakeVariant{name: "silence/cfloor", floor: true, gap: silenceGap, set: "200ms"},
			wakeVariant{name: "silence/raw-wait", policy: adaptive, gap: rawSilenceGap, set: "200ms"},
			wakeVariant{name: "silence/deep-idle", policy: adaptive, gap: silenceGap, set: "200ms"})
	}
	prev := runtime.GOMAXPROCS(ProcsFor(1))
	defer runtime.GOMAXPROCS(prev)
	rng := rand.New(rand.NewPCG(16, 17))
	rounds := *wakeRounds
	lat := make([][][]int64, len(variants)) // variant, round, frame
	deep := make([]uint64, len(variants))   // deep-idle waits per variant
	for i := range lat {
		lat[i] = make([][]int64, rounds)
	}
	b.ResetTimer()
	for r := range rounds {
		for _, i := range rng.Perm(len(variants)) {
			v := variants[i]
			n := *wakeChunk
			if v.set == "200ms" {
				n = *wakeSilence
			}
			if v.floor {
				lat[i][r] = floorChunk(b, floor, n, v.gap)
			} else {
				lat[i][r], deep[i] = goChunk(b, v.policy, n, v.gap, deep[i])
			}
		}
	}
	b.StopTimer()
	fmt.Print(wakeTable(variants, lat, deep, rng))
}

// goChunk sends n frames gap apart through a fresh reflect dataplane under policy and
// returns the latencies of those that came back (injected → handed to TX), and deep plus
// the thread's deep-idle waits.
func goChunk(b *testing.B, policy idle.PolicyConfig, n int, gap time.Duration, deep uint64) ([]int64, uint64) {
	rec, _, after := pacedReflect(b, policy, n, constantGap(gap), false)
	out := make([]int64, 0, n)
	for _, l := range rec.lat {
		if l != 0 {
			out = append(out, l)
		}
	}
	return out, deep + after.Idle.DeepSleeps
}

// floorChunk runs the C floor for n wake-ups gap apart, pinned like the Go threads, and
// returns its latencies (FLOOR_DUMP makes it print every one).
func floorChunk(b *testing.B, path string, n int, gap time.Duration) []int64 {
	args := []string{strconv.Itoa(n), strconv.Itoa(int(gap / time.Microsecond))}
	if poll, sender := benchCPUs(); poll >= 0 {
		args = append(args, strconv.Itoa(poll), strconv.Itoa(sender))
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "FLOOR_DUMP=1")
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	var lat []int64
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "lat ")
		if !ok {
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("floor output %q: %v", sc.Text(), err)
		}
		lat = append(lat, x)
	}
	if len(lat) == 0 {
		b.Fatalf("%s printed no latencies", path)
	}
	return lat
}

// pooledPcts are the 50th and 99th percentiles of the rounds picked (indexes into
// perRound).
func pooledPcts(perRound [][]int64, picked []int) [2]float64 {
	var all []int64
	for _, r := range picked {
		all = append(all, perRound[r]...)
	}
	slices.Sort(all)
	return [2]float64{float64(pctOf(all, 50)), float64(pctOf(all, 99))}
}

// wakeTable formats the pooled percentiles per variant and the ratios to the floor of
// the same set (and threaded to inline-raw) with 5th–95th percentile bootstrap
// intervals: each resample draws the rounds with replacement, the same rounds for every
// variant.
func wakeTable(variants []wakeVariant, lat [][][]int64, deep []uint64, rng *rand.Rand) string {
	rounds := len(lat[0])
	all := make([]int, rounds)
	for i := range all {
		all[i] = i
	}
	const resamples = 400
	exact := make([][2]float64, len(variants))
	boot := make([][][2]float64, len(variants)) // variant, resample
	for i := range variants {
		exact[i] = pooledPcts(lat[i], all)
	}
	pick := make([]int, rounds)
	for range resamples {
		benchstat.Resample(rng, pick)
		for i := range variants {
			boot[i] = append(boot[i], pooledPcts(lat[i], pick))
		}
	}
	index := map[string]int{}
	for i, v := range variants {
		index[v.name] = i
	}
	// ratio formats a/b at percentile p (0: p50, 1: p99), exact and with its interval.
	ratio := func(a, b, p int) string {
		var rs []float64
		for k := range boot[a] {
			if d := boot[b][k][p]; d > 0 {
				rs = append(rs, boot[a][k][p]/d)
			}
		}
		if len(rs) == 0 || exact[b][p] == 0 {
			return "-"
		}
		lo, hi := benchstat.Interval(rs)
		return fmt.Sprintf("%.2f× [%.2f, %.2f]", exact[a][p]/exact[b][p], lo, hi)
	}
	pin := "pinned"
	if poll, _ := benchCPUs(); poll < 0 {
		pin = "unpinned"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "wake-up latency, %s, %d interleaved rounds pooled (90 %% bootstrap intervals over rounds)\n", pin, rounds)
	fmt.Fprintf(&s, "| variant | gap | frames | deep waits | p50 µs | p99 µs | p50 / floor | p99 / floor |\n|---|---|---|---|---|---|---|---|\n")
	for i, v := range variants {
		floor := index["cfloor"]
		if v.set != variants[floor].set {
			floor = index["silence/cfloor"]
		}
		n := 0
		for _, r := range lat[i] {
			n += len(r)
		}
		fmt.Fprintf(&s, "| %s | %v | %d | %d | %.1f | %.1f | %s | %s |\n", v.name, v.gap, n, deep[i],
			exact[i][0]/1e3, exact[i][1]/1e3, ratio(i, floor, 0), ratio(i, floor, 1))
	}
	if th, in := index["adaptive-threaded"], index["adaptive-inline-raw"]; th != in {
		fmt.Fprintf(&s, "threaded / inline-raw: p50 %s, p99 %s\n", ratio(th, in, 0), ratio(th, in, 1))
	}
	if d, r := index["silence/deep-idle"], index["silence/raw-wait"]; d != r {
		fmt.Fprintf(&s, "first frame after a silence, deep idle (200 ms) / raw wait (90 ms): p50 %s, p99 %s\n", ratio(d, r, 0), ratio(d, r, 1))
	}
	return s.String()
}

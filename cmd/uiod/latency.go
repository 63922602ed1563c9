package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/ixgbe"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
	"github.com/uiod/uiod/wire"
)

func init() { commands = append(commands, newLatencyCmd) }

// Defaults of `uiod latency`.
const (
	defaultPolicies      = "busy,adaptive,auto,sleep:20us-50us,sleep:100us-200us,sleep:1000us-1100us"
	defaultSimDuration   = 4 * time.Second  // per policy: six policies stay under 30 s
	defaultWireDuration  = 10 * time.Second // --tx/--rx runs
	maxDefaultSimRuntime = 30 * time.Second
)

// latencyFlags are the flags of `uiod latency`.
type latencyFlags struct {
	tx, rx   string
	sim      bool
	policies string
	duration time.Duration
	count    int
	interval time.Duration
	pattern  string
	size     int
	timeout  time.Duration
	spin     time.Duration
	loadRate string
	loadSize int
	label    string
	csv      string
	json     string
	plot     string
	seed     uint64
}

func newLatencyCmd() *cobra.Command {
	var f latencyFlags
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "Measure forwarding latency with timestamped probes (MoonGen-style)",
		Long: `Send timestamped Ethernet/IPv4/UDP probes and measure how long they take to come back.

With --sim (the default when no --tx is given) two model 82599 ports run in-process,
driven by the real ixgbe driver and the dataplane forwarding l2fwd between them, and each
idle policy in --policies is measured in turn; the result is one table of poll-thread CPU
and latency per policy.

With --tx/--rx the probes go out on one wire and are expected back on another, for a
running 'uiod run' with ports on unix wires or a QEMU guest's NICs:
  unix:LOCAL,REMOTE   unix datagram sockets (QEMU -netdev dgram: bind LOCAL, send to REMOTE)
  afpacket:IFNAME     a kernel interface through AF_PACKET
  tap:IFNAME          a TAP interface
  pair:NAME           an in-process wire (tests)

Policies: busy, adaptive[:THRESHOLD], auto, threaded, sleep:MIN-MAX, each optionally
followed by +hk:HZ/LENGTH (housekeeping yields), e.g. busy+hk:100/10us.
Patterns: constant:400us, constant:2.5kpps, onoff:100kpps,10ms,90ms, poisson:10kpps.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLatency(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tx, "tx", "", "wire to send probes on (unix:…, afpacket:…, tap:…, pair:…)")
	fl.StringVar(&f.rx, "rx", "", "wire the probes come back on (default: the --tx wire)")
	fl.BoolVar(&f.sim, "sim", false, "measure in-process model 82599 ports forwarded by the dataplane (default without --tx)")
	fl.StringVar(&f.policies, "policies", defaultPolicies, "comma-separated idle policies to measure with --sim")
	fl.DurationVar(&f.duration, "duration", 0, "how long to send probes (per policy with --sim; default 4s with --sim, 10s otherwise)")
	fl.IntVar(&f.count, "count", 0, "stop after this many probes (0: no limit)")
	fl.DurationVar(&f.interval, "interval", latency.DefaultInterval, "gap between probes (shorthand for --pattern constant:GAP)")
	fl.StringVar(&f.pattern, "pattern", "", "traffic pattern of the probes (instead of --interval)")
	fl.IntVar(&f.size, "size", latency.DefaultSize, "probe frame size in bytes without FCS (64-1514)")
	fl.DurationVar(&f.timeout, "timeout", latency.DefaultTimeout, "a probe slower than this counts as late")
	fl.DurationVar(&f.spin, "spin", latency.DefaultSpin, "busy-wait this long before each send instead of sleeping (0: never)")
	fl.StringVar(&f.loadRate, "load-rate", "", "unmeasured background load in frames per second (e.g. 50kpps)")
	fl.IntVar(&f.loadSize, "load-size", 0, "background frame size in bytes (default --size)")
	fl.StringVar(&f.label, "label", "", "label of the run in the output (default: the wire or policy)")
	fl.StringVar(&f.csv, "csv", "", "write the latency histogram as CSV to this file (- for stdout)")
	fl.StringVar(&f.json, "json", "", "write the results as JSON to this file (- for stdout)")
	fl.StringVar(&f.plot, "plot", "", "draw histogram and CDF into this .png or .svg file")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of random patterns (0: random)")
	return cmd
}

// probeConfig checks the flags shared by both modes and returns the run configuration.
func (f *latencyFlags) probeConfig(cmd *cobra.Command) (latency.Config, error) {
	c := latency.Config{Size: f.size, Count: f.count, Timeout: f.timeout, Seed: f.seed, Label: f.label}
	if f.size < latency.MinFrameSize || f.size > latency.MaxFrameSize {
		return c, usagef("--size: %d is outside %d..%d", f.size, latency.MinFrameSize, latency.MaxFrameSize)
	}
	if f.count < 0 {
		return c, usagef("--count: %d is negative", f.count)
	}
	if f.duration < 0 {
		return c, usagef("--duration: %v is negative", f.duration)
	}
	if f.timeout <= 0 {
		return c, usagef("--timeout: %v is not positive", f.timeout)
	}
	if f.interval <= 0 {
		return c, usagef("--interval: %v is not positive", f.interval)
	}
	switch {
	case f.spin < 0:
		return c, usagef("--spin: %v is negative", f.spin)
	case f.spin == 0:
		c.Spin = -1
	default:
		c.Spin = f.spin
	}
	c.Pattern = latency.Constant{Gap: f.interval}
	if f.pattern != "" {
		if cmd.Flags().Changed("interval") {
			return c, usagef("--pattern and --interval: give only one")
		}
		p, err := latency.ParsePattern(f.pattern)
		if err != nil {
			return c, usagef("--pattern: %v", err)
		}
		c.Pattern = p
	}
	if f.loadRate != "" {
		r, err := latency.ParseRate(f.loadRate)
		if err != nil {
			return c, usagef("--load-rate: %v", err)
		}
		c.LoadRate = r
	}
	if f.loadSize != 0 {
		if f.loadRate == "" {
			return c, usagef("--load-size: needs --load-rate")
		}
		if f.loadSize < latency.MinFrameSize || f.loadSize > latency.MaxFrameSize {
			return c, usagef("--load-size: %d is outside %d..%d", f.loadSize, latency.MinFrameSize, latency.MaxFrameSize)
		}
		c.LoadSize = f.loadSize
	}
	if f.plot != "" {
		if ext := strings.ToLower(f.plot[strings.LastIndexByte(f.plot, '.')+1:]); !strings.Contains(f.plot, ".") || (ext != "png" && ext != "svg") {
			return c, usagef("--plot: %q is not a .png or .svg file name", f.plot)
		}
	}
	return c, nil
}

func runLatency(cmd *cobra.Command, f *latencyFlags) error {
	cfg, err := f.probeConfig(cmd)
	if err != nil {
		return err
	}
	if f.tx == "" && f.rx != "" {
		return usagef("--rx: needs --tx")
	}
	simMode := f.sim || f.tx == ""
	if f.sim && f.tx != "" {
		return usagef("--sim and --tx: give only one")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var results []*latency.Result
	var rows []policyRow
	if simMode {
		policies, err := parsePolicies(f.policies)
		if err != nil {
			return usagef("--policies: %v", err)
		}
		if f.duration == 0 && f.count == 0 {
			cfg.Duration = defaultSimDuration
			if n := len(policies); time.Duration(n)*cfg.Duration > maxDefaultSimRuntime {
				cfg.Duration = maxDefaultSimRuntime / time.Duration(n)
			}
		} else {
			cfg.Duration = f.duration
		}
		rows, err = runSimPolicies(ctx, cmd.ErrOrStderr(), policies, cfg)
		if err != nil {
			return err
		}
		for _, r := range rows {
			fmt.Fprintln(cmd.OutOrStdout(), r.res.MoonGen())
			results = append(results, r.res)
		}
		fmt.Fprintln(cmd.OutOrStdout())
		writePolicyTable(cmd.OutOrStdout(), rows)
	} else {
		if cmd.Flags().Changed("policies") {
			return usagef("--policies: only with --sim")
		}
		txSpec, err := wire.Parse(f.tx)
		if err != nil {
			return usagef("--tx: %v", err)
		}
		rxSpec := txSpec
		if f.rx != "" && f.rx != f.tx {
			if rxSpec, err = wire.Parse(f.rx); err != nil {
				return usagef("--rx: %v", err)
			}
		}
		cfg.Duration = f.duration
		if f.duration == 0 && f.count == 0 {
			cfg.Duration = defaultWireDuration
		}
		if cfg.Label == "" {
			cfg.Label = txSpec.String()
		}
		res, err := runWires(ctx, cmd.ErrOrStderr(), txSpec, rxSpec, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), res.MoonGen())
		results = append(results, res)
	}
	return writeLatencyFiles(cmd.OutOrStdout(), f, results, rows)
}

// runWires measures one run from tx to rx.
func runWires(ctx context.Context, progress io.Writer, txSpec, rxSpec wire.Spec, cfg latency.Config) (*latency.Result, error) {
	tx, err := txSpec.Open()
	if err != nil {
		return nil, err
	}
	defer tx.Close()
	rx := tx
	if rxSpec == txSpec && txSpec.Kind == wire.KindPair {
		// One named in-process wire: send on one end, receive on the other.
		if rx, err = txSpec.Open(); err != nil {
			return nil, err
		}
		defer rx.Close()
	} else if rxSpec != txSpec {
		if rx, err = rxSpec.Open(); err != nil {
			return nil, err
		}
		defer rx.Close()
	}
	what := fmt.Sprintf("%d probes", cfg.Count)
	if cfg.Duration > 0 {
		what = cfg.Duration.String()
	}
	fmt.Fprintf(progress, "latency: %s → %s, %s, %s\n", txSpec, rxSpec, cfg.Pattern, what)
	res, err := latency.Run(ctx, tx, rx, cfg)
	if err != nil {
		return nil, err
	}
	if res.Sent == 0 {
		return res, fmt.Errorf("no probe could be sent on %s (%d send errors)", txSpec, res.SendErrors)
	}
	return res, nil
}

// policy is one idle policy to measure with --sim.
type policy struct {
	name string
	cfg  irq.PolicyConfig
}

// parsePolicies parses a comma-separated policy list (see the command's help).
func parsePolicies(s string) ([]policy, error) {
	var out []policy
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("empty policy in %q", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("policy %q listed twice", name)
		}
		seen[name] = true
		c, err := parsePolicy(name)
		if err != nil {
			return nil, err
		}
		out = append(out, policy{name, c})
	}
	return out, nil
}

func parsePolicy(s string) (irq.PolicyConfig, error) {
	var c irq.PolicyConfig
	base, hk, hasHK := strings.Cut(s, "+")
	kind, arg, hasArg := strings.Cut(base, ":")
	switch kind {
	case "busy", "auto", "threaded":
		if hasArg {
			return c, fmt.Errorf("policy %q takes no argument", s)
		}
		switch kind {
		case "busy":
			c.Mode = irq.Busy
		case "auto":
			c.Mode, c.Auto = irq.Adaptive, true
		case "threaded":
			c.Mode, c.Delivery = irq.Adaptive, irq.Threaded
		}
	case "adaptive":
		c.Mode = irq.Adaptive
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("policy %q: threshold %q is not a positive duration", s, arg)
			}
			c.IdleThreshold = d
		}
	case "sleep":
		lo, hi, ok := strings.Cut(arg, "-")
		min, err1 := time.ParseDuration(lo)
		max, err2 := time.ParseDuration(hi)
		if !hasArg || !ok || err1 != nil || err2 != nil {
			return c, fmt.Errorf("policy %q: want sleep:MIN-MAX such as sleep:100us-200us", s)
		}
		c.Mode, c.SleepMin, c.SleepMax = irq.SleepRange, min, max
	default:
		return c, fmt.Errorf("unknown policy %q (want busy, adaptive[:THRESHOLD], auto, threaded or sleep:MIN-MAX)", s)
	}
	if hasHK {
		spec, ok := strings.CutPrefix(hk, "hk:")
		hz, length, ok2 := strings.Cut(spec, "/")
		n, err1 := strconv.Atoi(hz)
		d, err2 := time.ParseDuration(length)
		if !ok || !ok2 || err1 != nil || err2 != nil {
			return c, fmt.Errorf("policy %q: want +hk:HZ/LENGTH such as +hk:100/10us", s)
		}
		c.HousekeepingHz, c.HousekeepingLength = n, d
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("policy %q: %w", s, err)
	}
	return c, nil
}

// policyRow is one line of the --sim table.
type policyRow struct {
	name    string
	res     *latency.Result
	cpu     float64 // poll-thread CPU share, percent (of one CPU, summed over threads)
	wakeups uint64  // sleeps ended by an interrupt
	sleeps  uint64  // epoll waits and range sleeps
	// auto on periodic traffic: timer wake-ups ahead of a predicted frame, and those after
	// which the frame was caught by polling.
	predicted, caught uint64
}

// writePolicyTable prints the KNI seed's CPU-vs-latency table.
func writePolicyTable(w io.Writer, rows []policyRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tCPU %\tp50\tp99\tmax\twakeups\tpredicted\tsleeps\tlost\t")
	for _, r := range rows {
		s := r.res.Summary()
		pred := "-"
		if r.predicted > 0 {
			pred = fmt.Sprintf("%d/%d", r.caught, r.predicted)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t\n", r.name, r.cpu,
			fmtNs(s.Median), fmtNs(s.P99), fmtNs(s.Max), r.wakeups, pred, r.sleeps, r.res.Lost+r.res.Late)
	}
	tw.Flush()
}

// fmtNs formats a latency in ns with a unit that keeps it short.
func fmtNs(ns int64) string {
	switch {
	case ns >= 10_000_000:
		return fmt.Sprintf("%.0fms", float64(ns)/1e6)
	case ns >= 1_000_000:
		return fmt.Sprintf("%.2fms", float64(ns)/1e6)
	case ns >= 10_000:
		return fmt.Sprintf("%.0fµs", float64(ns)/1e3)
	case ns >= 1000:
		return fmt.Sprintf("%.1fµs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%dns", ns)
}

// policyJSON is one --sim policy's row in the --json output.
type policyJSON struct {
	Policy     string          `json:"policy"`
	CPUPercent float64         `json:"cpu_percent"`
	Wakeups    uint64          `json:"wakeups"`
	Predicted  uint64          `json:"wakeups_predicted"`
	Caught     uint64          `json:"predicted_caught"`
	Sleeps     uint64          `json:"sleeps"`
	Latency    *latency.Result `json:"latency"`
}

// writeLatencyFiles writes --csv, --json and --plot. With --sim (rows not nil) the JSON is
// a list of policies with their CPU share, wake-ups and latency result; otherwise it is
// the one result.
func writeLatencyFiles(stdout io.Writer, f *latencyFlags, results []*latency.Result, rows []policyRow) error {
	if len(results) == 0 {
		if f.csv != "" || f.json != "" || f.plot != "" {
			return errors.New("no results to write: interrupted before the first run ended")
		}
		return nil
	}
	if f.csv != "" {
		if err := writeOutput(stdout, f.csv, func(w io.Writer) error {
			if rows == nil {
				return results[0].WriteCSV(w)
			}
			return latency.WriteCSVRuns(w, results)
		}); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if f.json != "" {
		if err := writeOutput(stdout, f.json, func(w io.Writer) error {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			if rows == nil {
				return e.Encode(results[0])
			}
			out := make([]policyJSON, len(rows))
			for i, r := range rows {
				out[i] = policyJSON{r.name, r.cpu, r.wakeups, r.predicted, r.caught, r.sleeps, r.res}
			}
			return e.Encode(out)
		}); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	if f.plot != "" {
		if err := latency.WritePlot(f.plot, results); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

// writeOutput runs write on the file path, or on stdout for "-".
func writeOutput(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// simPorts are two model 82599 ports driven by the real ixgbe driver, their cables
// plugged into the wires given to openSimPorts.
type simPorts struct {
	models [2]*intel.Model
	ports  [2]*ixgbe.Port
}

// openSimPorts builds two model ports on cables and opens them with the ixgbe driver.
func openSimPorts(cables [2]wire.Port) (*simPorts, error) {
	s := &simPorts{}
	iommu := sim.NewIOMMU() // one container: l2fwd sends port 0's buffers out of port 1
	for i := range s.models {
		m, err := intel.New(intel.Config{
			Addr:  pci.Addr{Bus: 1, Device: 0, Function: uint8(i)},
			Wire:  cables[i],
			IOMMU: iommu,
		})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("model port %d: %w", i, err)
		}
		s.models[i] = m
		p, err := ixgbe.Open(m.Device(), nic.Config{Promiscuous: true})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("open model port %d: %w", i, err)
		}
		s.ports[i] = p
	}
	return s, nil
}

// close closes the driver ports (which quiesce and close their devices), then the models.
func (s *simPorts) close() {
	for i := range s.ports {
		if s.ports[i] != nil {
			s.ports[i].Close()
		}
		if s.models[i] != nil {
			s.models[i].Close()
		}
	}
}

// drops describes the frames the model ports and drivers lost so far ("" if none).
func (s *simPorts) drops() string {
	var out string
	for i, m := range s.models {
		ms, ps := m.Stats(), s.ports[i].Stats()
		if n := ms.Missed + ms.Dropped + ms.BadFrames + ms.Filtered + ms.RxOff + ms.TxErrors + ms.TxLinkDown + ms.WireLost + ps.RxErrors + ps.TxErrors; n > 0 {
			out += fmt.Sprintf(" (port %d: missed %d, refused %d, tx errors %d, wire lost %d)", i,
				ms.Missed, ms.BadFrames+ms.Filtered+ms.RxOff+ps.RxErrors, ms.TxErrors+ps.TxErrors+ms.TxLinkDown, ms.WireLost)
		}
	}
	return out
}

// forward starts a dataplane with one polling thread forwarding l2fwd between the two
// ports under policy pol.
func (s *simPorts) forward(pol irq.PolicyConfig) (*dataplane.Dataplane, error) {
	dp, err := dataplane.New(dataplane.Config{
		App: dataplane.L2Fwd,
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{
			{Name: "p0", RxPort: s.ports[0], TxPort: s.ports[1]},
			{Name: "p1", RxPort: s.ports[1], TxPort: s.ports[0]},
		}}},
		Policy: pol,
	})
	if err != nil {
		return nil, err
	}
	if err := dp.Start(); err != nil {
		return nil, err
	}
	return dp, nil
}

// runSimPolicies measures each policy on two model 82599 ports forwarded by the dataplane
// (l2fwd both ways, one polling thread), one run per policy on the same ports.
func runSimPolicies(ctx context.Context, progress io.Writer, policies []policy, cfg latency.Config) ([]policyRow, error) {
	if runtime.GOMAXPROCS(0) < irq.ProcsFor(1) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(irq.ProcsFor(1)))
	}
	var cable, gen [2]wire.Port
	for i := range cable {
		cable[i], gen[i] = wire.Pair()
	}
	s, err := openSimPorts(cable)
	if err != nil {
		return nil, err
	}
	defer s.close()
	cfg.Addrs = latency.DefaultAddrs()
	cfg.Addrs.DstMAC = s.ports[0].MAC()
	label := cfg.Label
	var rows []policyRow
	for i, pol := range policies {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "latency: [%d/%d] %s: %s for %v …\n", i+1, len(policies), pol.name, cfg.Pattern, cfg.Duration)
		row, err := runSimPolicy(ctx, s, gen[0], gen[1], pol, cfg)
		if err != nil {
			return rows, fmt.Errorf("policy %s: %w", pol.name, err)
		}
		if label != "" {
			row.res.Label = label + " " + pol.name
		}
		sum := row.res.Summary()
		fmt.Fprintf(progress, "latency: [%d/%d] %s: CPU %.1f%%, p50 %s, p99 %s, lost %d, late %d%s\n", i+1, len(policies), pol.name,
			row.cpu, fmtNs(sum.Median), fmtNs(sum.P99), row.res.Lost, row.res.Late, s.drops())
		rows = append(rows, row)
	}
	return rows, nil
}

// runSimPolicy runs the dataplane with one policy and measures it, sending on tx (port
// 0's cable) and receiving on rx (port 1's).
func runSimPolicy(ctx context.Context, s *simPorts, tx, rx wire.Port, pol policy, cfg latency.Config) (policyRow, error) {
	dp, err := s.forward(pol.cfg)
	if err != nil {
		return policyRow{}, err
	}
	defer dp.Stop()
	// Let the thread settle into its idle state before the first probe.
	time.Sleep(20 * time.Millisecond)
	before := dp.Threads()[0]
	cfg.Label = pol.name
	res, err := latency.Run(ctx, tx, rx, cfg)
	if err != nil {
		return policyRow{}, err
	}
	after := dp.Threads()[0]
	row := policyRow{
		name:    pol.name,
		res:     res,
		wakeups: after.Idle.WakeInterrupt - before.Idle.WakeInterrupt,
		sleeps:  after.Idle.Sleeps - before.Idle.Sleeps,

		predicted: after.Idle.WakePredicted - before.Idle.WakePredicted,
		caught:    after.Idle.PredictHits - before.Idle.PredictHits,
	}
	if g.log != nil {
		i := after.Idle
		g.log.Debug("poll thread idle policy", zap.String("policy", pol.name),
			zap.Duration("threshold", i.Threshold), zap.Duration("gap_estimate", i.GapEstimate),
			zap.Duration("wake_cost", i.WakeCost), zap.Duration("predicted_period", i.Period),
			zap.Duration("predicted_lead", i.Lead), zap.Uint64("wakeups_timeout", i.WakeTimeout),
			zap.Uint64("wakeups_spurious", i.WakeSpurious))
	}
	if wall := after.WallTime - before.WallTime; wall > 0 {
		row.cpu = 100 * float64(after.CPUTime-before.CPUTime) / float64(wall)
	}
	return row, nil
}

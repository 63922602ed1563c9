package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/latency/simrig"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/wire"
)

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
	nic      string
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
	flows    int
	stamps   string
	ports    string
	dstMAC   string
	dstIP    string
}

func newLatencyCmd(g *globals) *cobra.Command {
	var f latencyFlags
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "Measure forwarding latency with timestamped probes (MoonGen-style)",
		Long: `Send timestamped Ethernet/IPv4/UDP probes and measure how long they take to come back.

With --sim (the default when other flags but no --tx or --ports are given; a bare
'uiod latency' prints its usage) two model ports run in-process, driven by
the real driver and the dataplane forwarding l2fwd between them, and each idle policy in
--policies is measured in turn; the result is one table of poll-thread CPU and latency
per policy. --nic picks the ports: ixgbe (model 82599, the default), igb (model 82576),
igbvf (model 82576 VFs, each with its PF) or virtio (model virtio-net device).

With --tx/--rx the probes go out on one wire and are expected back on another, for a
running 'uiod run' with ports on unix wires or a QEMU guest's NICs:
  unix:LOCAL,REMOTE   unix datagram sockets (QEMU -netdev dgram: bind LOCAL, send to REMOTE)
  afpacket:IFNAME     a kernel interface through AF_PACKET
  tap:IFNAME          a TAP interface
  pair:NAME           an in-process wire (tests)

Policies: busy, adaptive[:THRESHOLD], auto, threaded, sleep:MIN-MAX, each optionally
followed by +hk:HZ/LENGTH (housekeeping yields), e.g. busy+hk:100/10us.
Patterns: constant:400us, constant:2.5kpps, onoff:100kpps,10ms,90ms, poisson:10kpps; at most
1 Mpps (a gap of 1us): faster is refused, as the sender cannot pace it. --flows N sends the
probes from N UDP source ports in turn, so that RSS spreads them over a NIC's queues.

Output: every mode prints one table with one unit per column (latencies in µs, n/a where
no probe came back); --tx/--rx and --ports print MoonGen's one-line histogram summary (in
ns, with "Lost: L/SENT") above it, for scripts written against MoonGen. The --sim heading
and the plot's title name the NIC model, the traffic pattern and the time per policy. The
--sim table's columns:
  CPU%       the poll thread's CPU time in percent of one core (n/a: the run was under
             100 ms, too short to measure it)
  samples    probes that came back in time; p50, p99, max: their latency
  wakeups    sleeps the RX interrupt ended (a frame woke the thread)
  predicted  auto only: timer wake-ups ahead of a frame it predicted on periodic traffic,
             as caught/predicted (caught: the frame was then caught by polling); - if none
  sleeps     times the poll thread went to sleep (epoll waits and timed sleeps)
  lost       probes that never came back or came back after --timeout
The wire table (--tx/--rx, --ports) has run (the --label), the latency columns, lost and
sent: the CPU and wake-up columns are the forwarder's, which a wire cannot see (its
/status and /metrics have them).

--csv, --json and --plot are checked before anything is measured and replaced only by a
complete file; with no probe back there is no plot (the run fails, the old plot stays).
With --csv - or --json - that document alone goes to stdout (one of them at a time) and
the heading, the table and the progress go to stderr, so that "| jq ." works.

--timestamps hw (with --sim) also measures every probe on the NICs' own clocks: the
generator drives two more model ports of the --nic kind through the real driver, the
probes become PTPv2 layer-2 frames carrying their sequence number, and the latency is
the receiving port's RX stamp less the sending port's TX stamp less the offset between
the two clocks (measured MoonGen's way, by reading both, and reported with its error).
Those figures are the dev columns beside the software ones, "(device clock)" series in
the CSV and the plot, and "device_clock" in the JSON; the software figures are then taken
on the generator's poll of its receiving port.

--ports TX,RX has the generator drive two PCI NICs on vfio-pci itself, through their
drivers, with or without --timestamps hw. Ports that cannot timestamp (virtio) are
reported and measured with software timestamps only: no figure is labelled device clock
unless it came from one.

Ctrl-C (SIGINT) or SIGTERM stops the run: what was measured is printed and written, the
run it was in cut short, and the exit code is 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLatency(cmd, g, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tx, "tx", "", "wire to send probes on (unix:…, afpacket:…, tap:…, pair:…)")
	fl.StringVar(&f.rx, "rx", "", "wire the probes come back on (default: the --tx wire)")
	fl.BoolVar(&f.sim, "sim", false, "measure in-process model ports forwarded by the dataplane (default without --tx)")
	fl.StringVar(&f.nic, "nic", simrig.NICIxgbe, "model ports and driver to measure with --sim: "+strings.Join(simrig.NICs, ", "))
	fl.StringVar(&f.policies, "policies", defaultPolicies, "comma-separated idle policies to measure with --sim")
	fl.DurationVar(&f.duration, "duration", 0, "how long to send probes (per policy with --sim; default 4s with --sim, 10s otherwise)")
	fl.IntVar(&f.count, "count", 0, "stop after this many probes (0: no limit)")
	fl.DurationVar(&f.interval, "interval", latency.DefaultInterval, "gap between probes (shorthand for --pattern constant:GAP)")
	fl.StringVar(&f.pattern, "pattern", "", "traffic pattern of the probes (instead of --interval)")
	fl.IntVar(&f.size, "size", latency.DefaultSize, "probe frame size in bytes without FCS (64-9724; above 1514 the ports need an MTU that carries it)")
	fl.DurationVar(&f.timeout, "timeout", latency.DefaultTimeout, "a probe slower than this counts as late")
	fl.DurationVar(&f.spin, "spin", latency.DefaultSpin, "busy-wait this long before each send instead of sleeping (0: never)")
	fl.StringVar(&f.loadRate, "load-rate", "", "unmeasured background load in frames per second (e.g. 50kpps)")
	fl.IntVar(&f.loadSize, "load-size", 0, "background frame size in bytes (default --size)")
	fl.StringVar(&f.label, "label", "", "label of the run in the output (default: the wire or policy)")
	fl.StringVar(&f.csv, "csv", "", "write the latency histogram as CSV to this file (- for stdout)")
	fl.StringVar(&f.json, "json", "", "write the results as JSON to this file (- for stdout)")
	fl.StringVar(&f.plot, "plot", "", "draw histogram and CDF into this .png or .svg file")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of random patterns (0: random)")
	fl.IntVar(&f.flows, "flows", 1, "spread the probes over this many UDP flows (source ports 319, 320, ...) for RSS")
	fl.StringVar(&f.stamps, "timestamps", "sw", "sw: software timestamps; hw: also the NICs' IEEE 1588 clocks (with --sim or --ports)")
	fl.StringVar(&f.ports, "ports", "", "TX,RX: two PCI NICs on vfio-pci the generator drives itself (instead of --tx/--rx wires)")
	fl.StringVar(&f.dstIP, "dst-ip", "", "destination IPv4 address of the probes on --tx (default 192.0.2.2): what a router (l3fwd) routes them by")
	fl.StringVar(&f.dstMAC, "dst-mac", "", "destination MAC of the probes on --tx (default 02:75:69:6f:64:02): a router (l3fwd) routes only frames to its port's own MAC")
	return cmd
}

// probeConfig checks the flags shared by both modes and returns the run configuration.
func (f *latencyFlags) probeConfig(cmd *cobra.Command) (latency.Config, error) {
	c := latency.Config{Size: f.size, Count: f.count, Timeout: f.timeout, Seed: f.seed, Label: f.label, Flows: f.flows}
	if f.size < latency.MinFrameSize || f.size > latency.MaxFrameSize {
		return c, usagef("--size: %d is outside %d..%d", f.size, latency.MinFrameSize, latency.MaxFrameSize)
	}
	if f.size > latency.StdFrameSize && (f.stamps == "hw" || f.ports != "") {
		return c, usagef("--size: %d: at most %d with --timestamps hw or --ports (the generator's own NIC ports send standard frames)", f.size, latency.StdFrameSize)
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
	if f.interval < latency.MinGap {
		return c, usagef("--interval: %v is shorter than the generator paces (%v between probes, 1 Mpps)", f.interval, latency.MinGap)
	}
	if f.flows < 1 || f.flows > 0x10000-int(latency.DefaultAddrs().SrcPort) {
		return c, usagef("--flows: %d is outside 1..%d", f.flows, 0x10000-int(latency.DefaultAddrs().SrcPort))
	}
	switch {
	case f.spin < 0:
		return c, usagef("--spin: %v is negative", f.spin)
	case f.spin == 0:
		c.Spin = -1
	default:
		c.Spin = f.spin
	}
	if f.dstMAC != "" {
		if f.tx == "" {
			return c, usagef("--dst-mac: only with --tx (the other modes address their own ports)")
		}
		m, err := net.ParseMAC(f.dstMAC)
		if err != nil || len(m) != 6 || m[0]&1 != 0 {
			return c, usagef("--dst-mac: %s is not a unicast Ethernet address (want xx:xx:xx:xx:xx:xx)", clip.Quote(f.dstMAC))
		}
		c.Addrs = latency.DefaultAddrs()
		c.Addrs.DstMAC = m
	}
	if f.dstIP != "" {
		if f.tx == "" {
			return c, usagef("--dst-ip: only with --tx (the other modes address their own ports)")
		}
		ip, err := netip.ParseAddr(f.dstIP)
		if err != nil || !ip.Is4() || ip.IsMulticast() || ip.IsUnspecified() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
			return c, usagef("--dst-ip: %s is not a unicast IPv4 address (want a.b.c.d; the probes are IPv4)", clip.Quote(f.dstIP))
		}
		if c.Addrs.SrcMAC == nil {
			c.Addrs = latency.DefaultAddrs()
		}
		c.Addrs.DstIP = ip
	}
	c.Pattern = latency.Constant{Gap: f.interval}
	if f.pattern != "" {
		if cmd.Flags().Changed("interval") {
			return c, usagef("--pattern and --interval: give only one")
		}
		p, err := latency.ParsePattern(f.pattern)
		if err == nil {
			err = latency.CheckPattern(p)
		}
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
		if r > float64(time.Second/latency.MinGap) {
			return c, usagef("--load-rate: %s is faster than the generator paces (%v between frames, 1 Mpps)", f.loadRate, latency.MinGap)
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
	return c, nil
}

func runLatency(cmd *cobra.Command, g *globals, f *latencyFlags) error {
	if cmd.Flags().NFlag() == 0 {
		// A bare `uiod latency` says what it can measure rather than running the demo.
		fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
		return usagef("say what to measure: --sim (two model ports in-process: the demo), " +
			"--tx WIRE [--rx WIRE] (a running uiod or a guest's NICs), or --ports TX,RX (two NICs on vfio-pci)")
	}
	hw, err := f.hwStamps(cmd)
	if err != nil {
		return err
	}
	cfg, err := f.probeConfig(cmd)
	if err != nil {
		return err
	}
	if hw && !cmd.Flags().Changed("size") {
		cfg.Size = latency.MinPTPFrameSize
	}
	if f.tx == "" && f.rx != "" {
		return usagef("--rx: needs --tx")
	}
	var portAddrs [2]pci.Addr
	if f.ports != "" {
		if f.sim || f.tx != "" {
			return usagef("--ports: not with --sim or --tx")
		}
		if portAddrs, err = parsePortsFlag(f.ports); err != nil {
			return err
		}
	}
	simMode := f.sim || (f.tx == "" && f.ports == "")
	if f.sim && f.tx != "" {
		return usagef("--sim and --tx: give only one")
	}
	var policies []simrig.Policy
	var txSpec, rxSpec wire.Spec
	if simMode {
		if !slices.Contains(simrig.NICs, f.nic) {
			return usagef("--nic: %s is not one of %s", clip.Quote(f.nic), strings.Join(simrig.NICs, ", "))
		}
		specs, err := parsePolicies(f.policies)
		if err != nil {
			return usagef("--policies: %v", err)
		}
		for _, p := range specs {
			policies = append(policies, simrig.Policy{Name: p.name, Config: p.cfg})
		}
		if f.duration == 0 && f.count == 0 {
			cfg.Duration = defaultSimDuration
			if n := len(policies); time.Duration(n)*cfg.Duration > maxDefaultSimRuntime {
				cfg.Duration = maxDefaultSimRuntime / time.Duration(n)
			}
		} else {
			cfg.Duration = f.duration
		}
	} else {
		if cmd.Flags().Changed("policies") {
			return usagef("--policies: only with --sim")
		}
		if cmd.Flags().Changed("nic") {
			return usagef("--nic: only with --sim")
		}
	}
	if !simMode && f.ports != "" {
		cfg.Duration = f.duration
		if f.duration == 0 && f.count == 0 {
			cfg.Duration = defaultWireDuration
		}
	} else if !simMode {
		if txSpec, err = wire.Parse(f.tx); err != nil {
			return usagef("--tx: %v", err)
		}
		rxSpec = txSpec
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
	}
	// Every output is opened before anything is measured: a bad path fails at once.
	outs, err := latency.OpenOutputs(f.csv, f.json, f.plot)
	if err != nil {
		return asUsage(outputError(err))
	}
	defer outs.Abort()

	// With a machine format on stdout, everything meant for a person goes to stderr.
	human := cmd.OutOrStdout()
	if outs.ToStdout() {
		human = cmd.ErrOrStderr()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if simMode {
		what := simrig.Describe(f.nic, cfg)
		outs.Title = what
		heading := "uiod latency --sim: l2fwd between two " + what
		if hw {
			heading += "; device clocks: two more such ports as the generator"
		}
		fmt.Fprintln(human, heading)
		rows, err := simrig.Run(ctx, policies, cfg, simrig.Options{Progress: cmd.ErrOrStderr(), Log: g.log, NIC: f.nic, HWStamps: hw})
		if err != nil && len(rows) == 0 {
			return err
		}
		var results []*latency.Result
		for _, r := range rows {
			results = append(results, r.Result)
		}
		results = latency.WithDeviceClock(results)
		if len(rows) > 0 {
			if err := simrig.WriteTable(human, rows); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return interrupted(outputError(outs.WriteRuns(cmd.OutOrStdout(), results, rows)), len(rows), len(policies))
		}
		return outputError(outs.WriteRuns(cmd.OutOrStdout(), results, rows))
	}
	if f.ports != "" {
		return runLatencyPorts(ctx, cmd, g, portAddrs, cfg, hw, outs, human)
	}
	outs.Title = fmt.Sprintf("%s, %s", cfg.Label, cfg.Pattern)
	res, err := latency.RunWires(ctx, cmd.ErrOrStderr(), txSpec, rxSpec, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(human, res.MoonGen())
	if err := latency.WriteTable(human, []*latency.Result{res}); err != nil {
		return err
	}
	err = outputError(outs.Write(cmd.OutOrStdout(), res))
	if ctx.Err() != nil {
		return interrupted(err, 1, 1)
	}
	if err == nil && res.Sent > 0 && res.Received == 0 {
		// Nothing measured is a failed measurement, not a result: the wires are not
		// cabled to a forwarder, or it forwards nothing back.
		return fmt.Errorf("no probe came back: %d sent on %s, none received on %s within --timeout %v", res.Sent, txSpec, rxSpec, cfg.Timeout)
	}
	return err
}

// hwStamps checks --timestamps: hw needs --sim (a --tx/--rx wire is no NIC port with a
// clock) and a probe size that holds a PTP probe.
func (f *latencyFlags) hwStamps(cmd *cobra.Command) (bool, error) {
	switch f.stamps {
	case "sw":
		return false, nil
	case "hw":
	default:
		return false, usagef("--timestamps: %s is not sw or hw", clip.Quote(f.stamps))
	}
	if f.tx != "" {
		return false, usagef("--timestamps hw: only with --sim or --ports: the --tx/--rx wires are not NIC ports, so they have no device clock to stamp on")
	}
	if cmd.Flags().Changed("size") && f.size < latency.MinPTPFrameSize {
		return false, usagef("--size: %d is too small for a PTP probe with --timestamps hw (at least %d)", f.size, latency.MinPTPFrameSize)
	}
	return true, nil
}

// interrupted is the error of a run stopped by a signal after measuring done of total
// runs (the last of them cut short); err is that of writing what was measured.
func interrupted(err error, done, total int) error {
	what := fmt.Sprintf("interrupted: %d of %d runs measured, the last cut short", done, total)
	if done == 0 {
		what = "interrupted before anything was measured"
	}
	if err != nil {
		what += "; " + err.Error()
	}
	return &interruptError{errors.New(what)}
}

// outputError names the flag of the output an error is about (--csv, --json, --plot).
func outputError(err error) error {
	var oe *latency.OutputError
	if errors.As(err, &oe) {
		return fmt.Errorf("--%s: %w", oe.Output, oe.Err)
	}
	return err
}

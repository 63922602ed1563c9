package simrig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/wire"
)

// Policy is one idle policy to measure, by name.
type Policy struct {
	Name   string
	Config idle.PolicyConfig
}

// Row is one policy's measurement.
type Row struct {
	Policy string
	Result *latency.Result
	// CPU is the poll thread's CPU share in percent of one CPU, over CPUWindow of its
	// wall time (0 when that is under MinCPUWindow: see CPUMeasured).
	CPU       float64
	CPUWindow time.Duration
	// Wakeups are sleeps ended by an interrupt; Sleeps are epoll waits and range sleeps.
	Wakeups, Sleeps uint64
	// Predicted are auto's timer wake-ups ahead of a predicted frame on periodic traffic,
	// Caught those after which the frame was caught by polling.
	Predicted, Caught uint64
}

// Options configure Run.
type Options struct {
	// Progress receives a line before and after each policy (nil: none).
	Progress io.Writer
	// Log receives the idle policy's estimates after each policy at debug level (nil:
	// none).
	Log *zap.Logger
	// NIC is the kind of model port to measure on, one of NICs ("": NICIxgbe).
	NIC string
	// HWStamps also measures every probe on device clocks: the generator drives two more
	// model ports of the same kind (hwrig.go) and the probes are PTP frames (cfg.Size at
	// least latency.MinPTPFrameSize). Ports that cannot timestamp are reported on
	// Progress and the run measures software timestamps only.
	HWStamps bool
	// Delay, with HWStamps, holds every frame on the cable from generator port 0 to
	// forwarding port 0 this long (a path with a known delay, for checking the figures).
	Delay time.Duration
}

// Run measures each policy in turn on one pair of model ports of kind opts.NIC, with cfg as the probe
// configuration of every run (its Addrs are set to reach the ports). It returns the rows
// measured so far when ctx is cancelled or a policy fails.
func Run(ctx context.Context, policies []Policy, cfg latency.Config, opts Options) ([]Row, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	var cable, gen [2]wire.Port
	for i := range cable {
		cable[i], gen[i] = wire.Pair()
	}
	name := opts.NIC
	if name == "" {
		name = NICIxgbe
	}
	s, err := OpenNICFor(name, cable, max(cfg.Size, cfg.LoadSize))
	if err != nil {
		return nil, err
	}
	var g *genRig
	if opts.HWStamps {
		if opts.Delay > 0 {
			gen[0] = delayWire{gen[0], opts.Delay}
		}
		if g, err = openGen(name, gen); err != nil {
			s.Close()
			if !errors.Is(err, nic.ErrNoTimesync) {
				return nil, err
			}
			fmt.Fprintf(progress, "latency: %v: no device clock to measure on, so software timestamps only\n", err)
			opts.HWStamps = false
			return Run(ctx, policies, cfg, opts)
		}
		defer g.close()
		gen[0], gen[1] = g.wires[0], g.wires[1]
	}
	defer s.Close()
	cfg.Addrs = latency.DefaultAddrs()
	cfg.Addrs.DstMAC = s.NICs[0].MAC()
	label := cfg.Label
	var rows []Row
	for i, pol := range policies {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "latency: [%d/%d] %s: %s for %v …\n", i+1, len(policies), pol.Name, cfg.Pattern, cfg.Duration)
		if g != nil {
			cfg.Stamps = g.stamps()
		}
		row, err := measure(ctx, s, gen[0], gen[1], pol, cfg, opts.Log)
		if err != nil {
			return rows, fmt.Errorf("policy %s: %w", pol.Name, err)
		}
		if label != "" {
			row.Result.Label = label + " " + pol.Name
		}
		sum := row.Result.Summary()
		cpu := "n/a"
		if row.CPUMeasured() {
			cpu = fmt.Sprintf("%.1f%%", row.CPU)
		}
		hw := ""
		if d := row.Result.DeviceClock; d != nil {
			hs := d.Summary()
			hw = fmt.Sprintf(" (device clock: p50 %s, p99 %s, ±%d ns)", latency.FormatNs(hs.Median), latency.FormatNs(hs.P99), row.Result.Clock.ErrorNs)
		}
		fmt.Fprintf(progress, "latency: [%d/%d] %s: CPU %s, p50 %s, p99 %s%s, lost %d, late %d%s\n", i+1, len(policies), pol.Name,
			cpu, latency.FormatNs(sum.Median), latency.FormatNs(sum.P99), hw, row.Result.Lost, row.Result.Late, s.Drops())
		rows = append(rows, row)
	}
	return rows, nil
}

// measure runs the dataplane with one policy and measures it, sending on tx (port 0's
// cable) and receiving on rx (port 1's).
func measure(ctx context.Context, s *Ports, tx, rx wire.Port, pol Policy, cfg latency.Config, log *zap.Logger) (Row, error) {
	dp, err := s.Forward(pol.Config)
	if err != nil {
		return Row{}, err
	}
	defer dp.Stop()
	// Let the thread settle into its idle state before the first probe.
	time.Sleep(20 * time.Millisecond)
	before := dp.Threads()[0]
	cfg.Label = pol.Name
	res, err := latency.Run(ctx, tx, rx, cfg)
	if err != nil {
		return Row{}, err
	}
	after := dp.Threads()[0]
	row := Row{
		Policy:  pol.Name,
		Result:  res,
		Wakeups: after.Idle.WakeInterrupt - before.Idle.WakeInterrupt,
		Sleeps:  after.Idle.Sleeps - before.Idle.Sleeps,

		Predicted: after.Idle.WakePredicted - before.Idle.WakePredicted,
		Caught:    after.Idle.PredictHits - before.Idle.PredictHits,
	}
	if log != nil {
		i := after.Idle
		log.Debug("poll thread idle policy", zap.String("policy", pol.Name),
			zap.Duration("threshold", i.Threshold), zap.Duration("gap_estimate", i.GapEstimate),
			zap.Duration("wake_cost", i.WakeCost), zap.Duration("predicted_period", i.Period),
			zap.Duration("predicted_lead", i.Lead), zap.Uint64("wakeups_timeout", i.WakeTimeout),
			zap.Uint64("wakeups_spurious", i.WakeSpurious))
	}
	row.CPUWindow = after.WallTime - before.WallTime
	if row.CPUMeasured() {
		row.CPU = 100 * float64(after.CPUTime-before.CPUTime) / float64(row.CPUWindow)
	}
	return row, nil
}

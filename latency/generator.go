// Package latency is a MoonGen-style packet generator and latency receiver for wires: it
// sends timestamped Ethernet/IPv4/UDP probes on one wire.Port at paced intervals (with
// optional unmeasured background load), matches them as they come back on another, and
// reports latency histograms, loss, duplicates and reordering as MoonGen lines, CSV, JSON
// and plots.
package latency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/uiod/uiod/wire"
)

// Defaults for Config's zero fields.
const (
	DefaultInterval = 400 * time.Microsecond // the seed measurement's probe gap
	DefaultTimeout  = 100 * time.Millisecond
	DefaultSize     = MinFrameSize
)

// MinGap is the shortest gap between frames the generator paces: sending one frame takes
// about a microsecond, so a pattern or load faster than 1 Mpps is refused rather than
// sent as fast as it goes.
const MinGap = time.Microsecond

// maxLag is how far behind its schedule the probe sender may fall before it skips slots.
const maxLag = time.Millisecond

// Config describes one run.
type Config struct {
	// Label names the run in its outputs (the MoonGen "[LABEL]").
	Label string
	// Addrs are the probe frames' addresses (DefaultAddrs if zero).
	Addrs Addrs
	// Size is the probe frame size in bytes without FCS, MinFrameSize..MaxFrameSize
	// (default 64).
	Size int
	// Pattern says when probes are sent (default Constant{DefaultInterval}). The schedule
	// is absolute, so a late send does not delay later ones; slots more than 1 ms overdue
	// after a stall are skipped (Pacing.Skipped) rather than sent back to back.
	Pattern Pattern
	// Count and Duration end the run: after Count probes or Duration, whichever comes
	// first; at least one must be set.
	Count    int
	Duration time.Duration
	// Timeout is how long a probe may take (default 100 ms): later ones count as late,
	// and the run waits this long after the last send for stragglers.
	Timeout time.Duration
	// Spin is how long before each send the pacer busy-waits instead of sleeping: 0 means
	// DefaultSpin, negative means never busy-wait.
	Spin time.Duration
	// LoadRate, if > 0, adds background frames at this many frames per second, of
	// LoadSize bytes (default Size). They are counted but not measured.
	LoadRate float64
	LoadSize int
	// Seed makes random patterns repeatable (0 picks one at random).
	Seed uint64
	// Flows spreads the probes over this many UDP flows (default 1): probe n leaves from
	// UDP source port Addrs.SrcPort + n mod Flows, so that a NIC's RSS hashes them onto
	// its queues. The receiver matches probes whatever their flow.
	Flows int
	// Stamps, if set, also measures every probe on the NICs' clocks: the probes become
	// PTP frames (ptpprobe.go; Size at least MinPTPFrameSize, Flows ignored) and the
	// NICWires Stamps was given to report their TX and RX stamps. Run starts and stops
	// it and fills Result.DeviceClock.
	Stamps *DeviceClock
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Addrs.SrcMAC == nil {
		c.Addrs = DefaultAddrs()
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	if c.Size < MinFrameSize || c.Size > MaxFrameSize {
		return c, fmt.Errorf("size %d is outside %d..%d", c.Size, MinFrameSize, MaxFrameSize)
	}
	if c.Stamps != nil && c.Size < MinPTPFrameSize {
		return c, fmt.Errorf("size %d: a PTP probe for device timestamps needs at least %d bytes", c.Size, MinPTPFrameSize)
	}
	if c.Pattern == nil {
		c.Pattern = Constant{Gap: DefaultInterval}
	}
	if err := CheckPattern(c.Pattern); err != nil {
		return c, err
	}
	if c.Count < 0 || c.Duration < 0 || (c.Count == 0 && c.Duration == 0) {
		return c, errors.New("set a positive count or duration")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("timeout %v is negative", c.Timeout)
	}
	if c.Spin == 0 {
		c.Spin = DefaultSpin
	}
	if c.LoadRate < 0 {
		return c, fmt.Errorf("load rate %v is negative", c.LoadRate)
	}
	if c.LoadSize == 0 {
		c.LoadSize = c.Size
	}
	if c.LoadRate > 0 && (c.LoadSize < MinFrameSize || c.LoadSize > MaxFrameSize) {
		return c, fmt.Errorf("load size %d is outside %d..%d", c.LoadSize, MinFrameSize, MaxFrameSize)
	}
	if c.LoadRate > float64(time.Second/MinGap) {
		return c, fmt.Errorf("load rate %v/s is faster than the generator paces (%v between frames)", c.LoadRate, MinGap)
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Flows == 0 {
		c.Flows = 1
	}
	if c.Flows < 0 || int(c.Addrs.SrcPort)+c.Flows-1 > 0xffff {
		return c, fmt.Errorf("flows %d: want 1 to %d from UDP source port %d", c.Flows, 0x10000-int(c.Addrs.SrcPort), c.Addrs.SrcPort)
	}
	return c, nil
}

// Run sends probes on tx as cfg describes, receives them on rx (which may be tx itself,
// for a reflector), and returns the result. It installs its receiver as rx's handler for
// the run and removes it afterwards. Cancelling ctx ends the sending early; the result
// covers what was sent. The calling goroutine is locked to its OS thread while it paces.
func Run(ctx context.Context, tx, rx wire.Port, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	probe, err := probeTemplate(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Stamps != nil {
		if err := cfg.Stamps.Start(); err != nil {
			return nil, err
		}
		defer cfg.Stamps.halt() // a run that ends early: no measurements left running
	}
	start := wire.Now()
	rcv := NewReceiver(start, int64(cfg.Timeout))
	rx.SetHandler(rcv.Handle)
	defer rx.SetHandler(nil)

	res := &Result{Label: cfg.Label, Pattern: cfg.Pattern.String()}
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	defer halt()
	go func() {
		select {
		case <-ctx.Done():
			halt()
		case <-stop:
		}
	}()

	var sendMu sync.Mutex // tx.Send is not promised to be safe for concurrent use
	var bg sync.WaitGroup
	if cfg.LoadRate > 0 {
		load, err := newFrameTemplate(cfg.Addrs, cfg.LoadSize, KindBackground)
		if err != nil {
			return nil, err
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			res.BackgroundSent = sendLoad(tx, &sendMu, load, cfg.LoadRate, start, stop)
		}()
	}

	p := newPacer(cfg.Spin, true)
	sched := cfg.Pattern.Schedule(cfg.Seed)
	end := int64(-1)
	if cfg.Duration > 0 {
		end = start + int64(cfg.Duration)
		// The schedule ends the run at Duration; the timer, just after, ends a wait or
		// a skip that would not.
		t := time.AfterFunc(cfg.Duration+maxLag, halt)
		defer t.Stop()
	}
	flow, flows := uint64(0), uint64(cfg.Flows)
	for seq := uint64(0); cfg.Count == 0 || seq < uint64(cfg.Count); seq++ {
		due := start + int64(sched.Next())
		// After a stall (the CPU was taken away), drop the slots already maxLag overdue
		// instead of sending them back to back: the grid stays, the burst does not.
		for now := wire.Now(); due < now-int64(maxLag) && (end < 0 || due < end); {
			p.p.Skipped++
			due = start + int64(sched.Next())
		}
		if end >= 0 && due >= end {
			break
		}
		if _, ok := p.waitUntil(due, stop); !ok {
			break
		}
		sendMu.Lock()
		err := tx.Send(probe.stampFlow(seq, wire.Now(), cfg.Addrs.SrcPort+uint16(flow)))
		if flow++; flow == flows {
			flow = 0
		}
		sendMu.Unlock()
		if err != nil {
			res.SendErrors++
			if errors.Is(err, wire.ErrClosed) {
				break
			}
			continue
		}
		res.Sent++
	}
	p.release()
	res.Pacing = p.stats()
	halt()
	bg.Wait()

	// Wait for stragglers, at most the timeout.
	deadline := time.Now().Add(cfg.Timeout)
	for rcv.accounted() < res.Sent && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	res.Elapsed = time.Duration(wire.Now() - start)
	rx.SetHandler(nil)
	rcv.fill(res)
	if cfg.Stamps != nil {
		cfg.Stamps.Stop()
		cfg.Stamps.fill(res)
	}
	return res, nil
}

// sendLoad sends background frames at rate until stop closes and returns how many it
// sent. It sleeps between sends and catches up with a burst when it wakes late, so it
// keeps the average rate without busy-waiting.
func sendLoad(tx wire.Port, mu *sync.Mutex, t *frameTemplate, rate float64, start int64, stop <-chan struct{}) uint64 {
	p := newPacer(-1, true)
	defer p.release()
	gap := float64(time.Second) / rate
	var sent uint64
	for n := uint64(0); ; n++ {
		due := start + int64(float64(n)*gap)
		now, ok := p.waitUntil(due, stop)
		if !ok {
			return sent
		}
		mu.Lock()
		err := tx.Send(t.stamp(n, now))
		mu.Unlock()
		if err == nil {
			sent++
		} else if errors.Is(err, wire.ErrClosed) {
			return sent
		}
	}
}

// CheckPattern rejects patterns whose schedule would not advance or that are faster
// than the generator paces (gaps under MinGap; rates over 1 Mpps).
func CheckPattern(p Pattern) error {
	maxRate := float64(time.Second / MinGap)
	switch p := p.(type) {
	case Constant:
		if p.Gap <= 0 {
			return fmt.Errorf("pattern %v: gap must be positive", p)
		}
		if p.Gap < MinGap {
			return fmt.Errorf("pattern %v: gap %v is shorter than the generator paces (%v)", p, p.Gap, MinGap)
		}
	case OnOff:
		if !(p.Rate > 0) || p.On <= 0 || p.Off < 0 || time.Duration(float64(time.Second)/p.Rate) > p.On {
			return fmt.Errorf("pattern %v: want a positive rate, ON of at least one gap and OFF ≥ 0", p)
		}
		if p.Rate > maxRate {
			return fmt.Errorf("pattern %v: rate is faster than the generator paces (%v between frames)", p, MinGap)
		}
	case Poisson:
		if !(p.Rate > 0) {
			return fmt.Errorf("pattern %v: rate must be positive", p)
		}
		if p.Rate > maxRate {
			return fmt.Errorf("pattern %v: rate is faster than the generator paces (%v between frames on average)", p, MinGap)
		}
	}
	return nil
}

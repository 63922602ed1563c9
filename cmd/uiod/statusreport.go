package main

import (
	"strings"

	"github.com/uiod/uiod/daemon"
)

// statusReport is what `uiod status` prints: the latest sample, with rates over the
// interval since the one before. In its JSON every duration is a number of seconds in a
// field named *_seconds.
type statusReport struct {
	Daemon string `json:"daemon"`
	// Version is the daemon's build version ("" from a daemon that does not say).
	Version string `json:"version,omitempty"`
	// Error says why this refresh of --watch has no sample (the rest is empty).
	Error         string  `json:"error,omitempty"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	// IntervalSeconds is the time between the two samples on the daemon's clock; 0 when
	// the daemon restarted between them (rates are then 0 and CPU % is since start).
	IntervalSeconds float64        `json:"interval_seconds"`
	Policy          policyReport   `json:"policy"`
	Ports           []portReport   `json:"ports"`
	Threads         []threadReport `json:"threads"`
	// RxWaits are the RX wait histograms' summaries (statusrxwait.go).
	RxWaits []rxWaitReport `json:"rx_waits,omitempty"`
	// Bridge is forward.mode bridge's table size and counters (statusbridge.go).
	Bridge *bridgeReport `json:"bridge,omitempty"`
	// FIB is forward.mode l3fwd's route count (statusfib.go).
	FIB *fibReport `json:"fib,omitempty"`
}

// policyReport is the configured idle policy, its durations in seconds only.
type policyReport struct {
	daemon.PolicyStatus
	NoIdleThreshold *struct{} `json:"idle_threshold,omitempty"`
	NoWaitTimeout   *struct{} `json:"wait_timeout,omitempty"`
}

// portReport is one port: its status (with the backend as driver and the NIC driver as
// nic) with rates, and the frames its RX queues could not forward (the peer's TX queue
// was full).
type portReport struct {
	daemon.PortStatus
	RxPerSecond    float64 `json:"rx_packets_per_second"`
	TxPerSecond    float64 `json:"tx_packets_per_second"`
	Drops          uint64  `json:"drops"`
	DropsPerSecond float64 `json:"drops_per_second"`
	// DropsBy is Drops by reason (no_route, tx_full, ...): only reasons that occurred.
	DropsBy map[string]uint64 `json:"drops_by,omitempty"`
}

// threadReport is one poll thread: its status with the durations in seconds instead of
// text, the queues it polls, CPU use and wake-ups per second over the interval.
type threadReport struct {
	daemon.ThreadStatus
	// The status's durations as text are left out (nil): each has its *_seconds field.
	NoMaxStall    *struct{} `json:"max_stall,omitempty"`
	NoThreshold   *struct{} `json:"idle_threshold,omitempty"`
	NoGapEstimate *struct{} `json:"gap_estimate,omitempty"`
	NoWakeCost    *struct{} `json:"wake_cost,omitempty"`
	NoPeriod      *struct{} `json:"predicted_period,omitempty"`
	NoLead        *struct{} `json:"predicted_lead,omitempty"`
	Queues        []string  `json:"queues"`
	// CPUPercent is over the interval (shadows the status's since-start figure).
	CPUPercent       float64   `json:"cpu_percent"`
	SleepsPerSecond  float64   `json:"sleeps_per_second"`
	WakeupsPerSecond wakeRates `json:"wakeups_per_second"`
	// StallsPerSecond and StalledPercent are the thread's stalls (polls that came over
	// idle.StallThreshold late) over the interval, and their share of it.
	StallsPerSecond float64 `json:"stalls_per_second"`
	StalledPercent  float64 `json:"stalled_percent"`
	// RuntimeYieldsPerSecond are the thread's voluntary yields to the Go scheduler
	// (idle.RuntimeYieldEvery) over the interval.
	RuntimeYieldsPerSecond float64 `json:"runtime_yields_per_second"`
}

// wakeRates are wake-ups per second by cause.
type wakeRates struct {
	Interrupt float64 `json:"interrupt"`
	Timeout   float64 `json:"timeout"`
	Predicted float64 `json:"predicted"`
	Stop      float64 `json:"stop"`
	Spurious  float64 `json:"spurious"`
}

// newThreadReport is t's report without the rates, which need the sample before.
func newThreadReport(t daemon.ThreadStatus) threadReport {
	return threadReport{ThreadStatus: t, CPUPercent: t.CPUPercent, Queues: []string{}}
}

// dropsBy sums the port's queues' drops by reason (nil without a drop).
func dropsBy(st daemon.Status, port string) map[string]uint64 {
	var by map[string]uint64
	for _, q := range st.Queues {
		if name, _, _ := strings.Cut(q.Name, "/"); name != port {
			continue
		}
		for reason, n := range q.DropsBy {
			if by == nil {
				by = map[string]uint64{}
			}
			by[reason] += n
		}
	}
	return by
}

// newStatusReport builds the report of cur with rates since prev. Counters that went
// backwards (a restart) give no rate.
func newStatusReport(base string, prev, cur daemon.Status) statusReport {
	r := statusReport{Daemon: base, Version: cur.Version, UptimeSeconds: cur.UptimeSeconds, Policy: policyReport{PolicyStatus: cur.Policy},
		Ports: []portReport{}, Threads: []threadReport{}}
	dt := cur.UptimeSeconds - prev.UptimeSeconds
	if dt <= 0 || prev.UptimeSeconds == 0 {
		dt = 0
	}
	r.IntervalSeconds = dt
	r.RxWaits = newRxWaitReports(cur.RxWaits)
	r.Bridge = newBridgeReport(cur.Bridge)
	r.FIB = newFIBReport(cur.FIB)
	rate := func(now, before uint64) float64 {
		if dt == 0 || now < before {
			return 0
		}
		return float64(now-before) / dt
	}
	drops := func(st daemon.Status, port string) uint64 {
		var n uint64
		for _, q := range st.Queues {
			if name, _, _ := strings.Cut(q.Name, "/"); name == port {
				n += q.Drops
			}
		}
		return n
	}
	for _, p := range cur.Ports {
		pr := portReport{PortStatus: p, Drops: drops(cur, p.Name), DropsBy: dropsBy(cur, p.Name)}
		for _, old := range prev.Ports {
			if old.Name == p.Name {
				pr.RxPerSecond = rate(p.Stats.RxPackets, old.Stats.RxPackets)
				pr.TxPerSecond = rate(p.Stats.TxPackets, old.Stats.TxPackets)
				pr.DropsPerSecond = rate(pr.Drops, drops(prev, p.Name))
			}
		}
		r.Ports = append(r.Ports, pr)
	}
	for _, t := range cur.Threads {
		tr := newThreadReport(t)
		for _, q := range cur.Queues {
			if q.Thread == t.Index {
				tr.Queues = append(tr.Queues, q.Name)
			}
		}
		for _, old := range prev.Threads {
			if old.Index != t.Index || dt == 0 {
				continue
			}
			// share is the percentage of the thread's wall time between the samples that a
			// counter of seconds grew by (0 over a restart, when the counter went back).
			wall := t.WallSeconds - old.WallSeconds
			share := func(now, then float64) float64 {
				if wall <= 0 || now < then {
					return 0
				}
				return 100 * (now - then) / wall
			}
			if wall > 0 && t.CPUSeconds >= old.CPUSeconds {
				tr.CPUPercent = share(t.CPUSeconds, old.CPUSeconds)
			}
			tr.SleepsPerSecond = rate(t.Sleeps, old.Sleeps)
			tr.StallsPerSecond = rate(t.Stalls, old.Stalls)
			tr.StalledPercent = share(t.StallSeconds, old.StallSeconds)
			tr.RuntimeYieldsPerSecond = rate(t.RuntimeYields, old.RuntimeYields)
			tr.WakeupsPerSecond = wakeRates{
				Interrupt: rate(t.WakeInterrupt, old.WakeInterrupt),
				Timeout:   rate(t.WakeTimeout, old.WakeTimeout),
				Predicted: rate(t.WakePredicted, old.WakePredicted),
				Stop:      rate(t.WakeStop, old.WakeStop),
				Spurious:  rate(t.WakeSpurious, old.WakeSpurious),
			}
		}
		r.Threads = append(r.Threads, tr)
	}
	return r
}

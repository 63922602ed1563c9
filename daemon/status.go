package daemon

import (
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
)

// Status is the daemon's state as /status serves it.
type Status struct {
	// Version and Revision identify the daemon's build (Options).
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Uptime   string `json:"uptime"`
	// UptimeSeconds is the same, as a number: two samples' difference is the interval
	// between them on the daemon's clock.
	UptimeSeconds float64        `json:"uptime_seconds"`
	Policy        PolicyStatus   `json:"policy"`
	Ports         []PortStatus   `json:"ports"`
	Queues        []QueueStatus  `json:"queues"`
	Threads       []ThreadStatus `json:"threads"`
	// RxWaits are the RX wait histograms of ports with an IEEE 1588 unit (rxwait.go).
	RxWaits []RxWaitStatus `json:"rx_waits"`
	// Bridge is forward.mode bridge's MAC table and counters (bridge.go).
	Bridge *BridgeStatus `json:"bridge,omitempty"`
	// FIB is forward.mode l3fwd's forwarding table (fib.go).
	FIB *FIBStatus `json:"fib,omitempty"`
}

// PolicyStatus is the configured idle policy. Each duration is there twice: as text
// ("300µs", "auto") and as a number of seconds in a *_seconds field, the one a program
// reads (IdleThresholdSeconds is null when the threshold is auto).
type PolicyStatus struct {
	Mode                 string   `json:"mode"`
	IdleThreshold        string   `json:"idle_threshold"`
	IdleThresholdAuto    bool     `json:"idle_threshold_auto"`
	IdleThresholdSeconds *float64 `json:"idle_threshold_seconds"`
	WaitTimeout          string   `json:"wait_timeout"`
	WaitTimeoutSeconds   float64  `json:"wait_timeout_seconds"`
	Delivery             string   `json:"delivery"`
	App                  string   `json:"app"`
}

// PortStatus is one port's identity, link and counters.
type PortStatus struct {
	Name   string `json:"name"`
	PCI    string `json:"pci"`
	Driver string `json:"driver"`
	// NIC is the NIC driver that opened the port: ixgbe, igb or virtio.
	NIC       string    `json:"nic"`
	MAC       string    `json:"mac"`
	LinkUp    bool      `json:"link_up"`
	SpeedMbps int       `json:"speed_mbps"`
	Stats     PortStats `json:"stats"`
	// Capturing is set while a uiod capture mirrors the port.
	Capturing bool `json:"capturing,omitempty"`
	// Absent is set while the kernel has the port's device (requested it for an unbind
	// or a remove) and it is not back yet; Removals and Reopens count those events.
	Absent   bool   `json:"absent"`
	Removals uint64 `json:"removals"`
	Reopens  uint64 `json:"reopens"`
	// Kernel is the port's kernel exception path, if it has one.
	Kernel *KernelStatus `json:"kernel,omitempty"`
}

// KernelStatus is a port's kernel exception path: its TAP interface and what crossed it
// (RX: from the kernel; TX: to the kernel, TxErrors the frames its full ring refused).
type KernelStatus struct {
	TAP   string    `json:"tap"`
	Stats PortStats `json:"stats"`
	// Gone is set once the TAP interface was deleted under the daemon (tap.Port.Gone).
	Gone bool `json:"gone,omitempty"`
	// Follow is what the TAP's watcher saw and did (docs/design.md, "The TAP follows its
	// port").
	Follow *TAPFollowStatus `json:"follow,omitempty"`
}

// PortStats are a port's NIC counters.
type PortStats struct {
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxMissed  uint64 `json:"rx_missed"`
	RxErrors  uint64 `json:"rx_errors"`
	TxErrors  uint64 `json:"tx_errors"`
	// TxTimeouts counts TX queues the driver found hung and reset.
	TxTimeouts uint64 `json:"tx_timeouts"`
	// DeviceResets counts device resets the driver did to recover a broken device.
	DeviceResets uint64 `json:"device_resets"`
}

func portStats(s nic.Stats) PortStats {
	return PortStats{RxPackets: s.RxPackets, RxBytes: s.RxBytes, TxPackets: s.TxPackets, TxBytes: s.TxBytes,
		RxMissed: s.RxMissed, RxErrors: s.RxErrors, TxErrors: s.TxErrors, TxTimeouts: s.TxTimeouts,
		DeviceResets: s.DeviceResets}
}

// QueueStatus is one polled queue's counters.
type QueueStatus struct {
	Name      string `json:"name"`
	Thread    int    `json:"thread"`
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	ToKernel  uint64 `json:"to_kernel"`
	Drops     uint64 `json:"drops"`
	// DropsBy counts the drops by reason (no_route, tx_full, ...): only reasons that occurred.
	DropsBy    map[string]uint64 `json:"drops_by,omitempty"`
	Polls      uint64            `json:"polls"`
	EmptyPolls uint64            `json:"empty_polls"`
}

// ThreadStatus is one poll thread's CPU use and idle-policy counters.
type ThreadStatus struct {
	Index         int     `json:"index"`
	CPU           int     `json:"cpu"`
	State         string  `json:"state"`
	CPUPercent    float64 `json:"cpu_percent"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	WallSeconds   float64 `json:"wall_seconds"`
	Arms          uint64  `json:"arms"`
	ArmRaces      uint64  `json:"arm_races"`
	Sleeps        uint64  `json:"sleeps"`
	WakeInterrupt uint64  `json:"wakeups_interrupt"`
	WakeTimeout   uint64  `json:"wakeups_timeout"`
	WakeStop      uint64  `json:"wakeups_stop"`
	WakeSpurious  uint64  `json:"wakeups_spurious"`
	WakePredicted uint64  `json:"wakeups_predicted"`
	PredictHits   uint64  `json:"predicted_caught"`
	AsleepSeconds float64 `json:"asleep_seconds"`
	Yields        uint64  `json:"housekeeping_yields"`
	DeepSleeps    uint64  `json:"deep_sleeps"`
	Stalls        uint64  `json:"stalls"`
	StallSeconds  float64 `json:"stall_seconds"`
	MaxStall      string  `json:"max_stall"`
	RuntimeYields uint64  `json:"runtime_yields"`
	ThreadChanges uint64  `json:"thread_changes"`
	Errors        uint64  `json:"errors"`
	Threshold     string  `json:"idle_threshold"`
	GapEstimate   string  `json:"gap_estimate,omitempty"`
	WakeCost      string  `json:"wake_cost,omitempty"`
	Period        string  `json:"predicted_period,omitempty"`
	Lead          string  `json:"predicted_lead,omitempty"`
	// The durations above in seconds; the estimates are absent until the policy has them.
	MaxStallSeconds    float64  `json:"max_stall_seconds"`
	ThresholdSeconds   float64  `json:"idle_threshold_seconds"`
	GapEstimateSeconds *float64 `json:"gap_estimate_seconds,omitempty"`
	WakeCostSeconds    *float64 `json:"wake_cost_seconds,omitempty"`
	PeriodSeconds      *float64 `json:"predicted_period_seconds,omitempty"`
	LeadSeconds        *float64 `json:"predicted_lead_seconds,omitempty"`
}

// secondsOf is d in seconds, for a *_seconds field that is absent when unknown.
func secondsOf(d time.Duration) *float64 {
	v := d.Seconds()
	return &v
}

// Status returns a snapshot of the daemon. It may be called from any goroutine. It holds
// the daemon's lock while it reads the ports, so Stop cannot close (and unmap) a port
// under it.
func (d *Daemon) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	ports, dp := d.ports, d.dp
	started := d.started
	st := Status{
		Version: d.opts.Version, Revision: d.opts.Revision,
		Policy: PolicyStatus{
			Mode:               d.cfg.Poll.Mode,
			IdleThreshold:      d.cfg.Poll.IdleThreshold.String(),
			IdleThresholdAuto:  d.cfg.Poll.IdleThreshold.Auto,
			WaitTimeout:        d.cfg.Poll.WaitTimeout.String(),
			WaitTimeoutSeconds: d.cfg.Poll.WaitTimeout.Seconds(),
			Delivery:           d.cfg.Poll.Delivery,
			App:                d.cfg.Forward.Mode,
		},
		Ports:   []PortStatus{},
		Queues:  []QueueStatus{},
		Threads: []ThreadStatus{},
	}
	if !st.Policy.IdleThresholdAuto {
		st.Policy.IdleThresholdSeconds = secondsOf(d.cfg.Poll.IdleThreshold.Duration)
	}
	if !started.IsZero() {
		up := time.Since(started)
		st.Uptime, st.UptimeSeconds = up.Round(time.Millisecond).String(), up.Seconds()
	}
	for i, p := range ports {
		l := p.nic.Link()
		removals, reopens := p.removalCounts()
		st.Ports = append(st.Ports, PortStatus{
			Absent: p.absent(), Removals: removals, Reopens: reopens,
			Capturing: dp != nil && dp.Mirrored(dataplane.PortID(i)),
			Name:      p.cfg.Name, PCI: p.pciName(), Driver: p.cfg.Driver, NIC: p.nicName, MAC: p.nic.MAC().String(),
			LinkUp: l.Up, SpeedMbps: l.SpeedMbps, Stats: portStats(p.nic.Stats()),
		})
		if p.kernel != nil {
			st.Ports[len(st.Ports)-1].Kernel = &KernelStatus{TAP: p.kernel.Name(), Stats: portStats(p.kernel.Stats()), Gone: p.kernel.Gone(), Follow: d.tapStatus(i)}
		}
	}
	if dp == nil {
		return st
	}
	for _, q := range dp.Stats() {
		st.Queues = append(st.Queues, QueueStatus{
			Name: q.Name, Thread: q.Thread, RxPackets: q.RxPackets, RxBytes: q.RxBytes,
			TxPackets: q.TxPackets, ToKernel: q.ToKernel, Drops: q.Drops, DropsBy: q.DropsBy, Polls: q.Polls, EmptyPolls: q.EmptyPolls,
		})
	}
	for _, t := range dp.Threads() {
		st.Threads = append(st.Threads, threadStatus(t))
	}
	st.RxWaits = rxWaitStatus(dp.RxWaits())
	st.Bridge = d.bridgeStatus()
	st.FIB = d.fibStatus()
	return st
}

func threadStatus(t dataplane.ThreadStats) ThreadStatus {
	ts := ThreadStatus{
		Index: t.Index, CPU: t.CPU, State: t.State.String(),
		CPUSeconds: t.CPUTime.Seconds(), WallSeconds: t.WallTime.Seconds(),
		Arms: t.Idle.Arms, ArmRaces: t.Idle.ArmRaces, Sleeps: t.Idle.Sleeps,
		WakeInterrupt: t.Idle.WakeInterrupt, WakeTimeout: t.Idle.WakeTimeout,
		WakeStop: t.Idle.WakeStop, WakeSpurious: t.Idle.WakeSpurious,
		WakePredicted: t.Idle.WakePredicted, PredictHits: t.Idle.PredictHits,
		AsleepSeconds: t.Idle.Asleep.Seconds(), Yields: t.Idle.Yields, DeepSleeps: t.Idle.DeepSleeps,
		Stalls: t.Idle.Stalls, StallSeconds: t.Idle.StallTime.Seconds(), MaxStall: t.Idle.MaxStall.String(),
		RuntimeYields: t.RuntimeYields, ThreadChanges: t.ThreadChanges,
		Errors:          t.Idle.Errors,
		Threshold:       t.Idle.Threshold.String(),
		MaxStallSeconds: t.Idle.MaxStall.Seconds(), ThresholdSeconds: t.Idle.Threshold.Seconds(),
	}
	if t.WallTime > 0 {
		ts.CPUPercent = 100 * t.CPUTime.Seconds() / t.WallTime.Seconds()
	}
	if t.Idle.GapEstimate > 0 || t.Idle.WakeCost > 0 {
		ts.GapEstimate, ts.WakeCost = t.Idle.GapEstimate.String(), t.Idle.WakeCost.String()
		ts.GapEstimateSeconds, ts.WakeCostSeconds = secondsOf(t.Idle.GapEstimate), secondsOf(t.Idle.WakeCost)
	}
	if t.Idle.Period > 0 {
		ts.Period, ts.Lead = t.Idle.Period.String(), t.Idle.Lead.String()
		ts.PeriodSeconds, ts.LeadSeconds = secondsOf(t.Idle.Period), secondsOf(t.Idle.Lead)
	}
	return ts
}

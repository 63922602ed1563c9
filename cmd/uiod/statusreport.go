package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/uiod/uiod/daemon"
)

// statusReport is what `uiod status` prints: the latest sample, with rates over the
// interval since the one before.
type statusReport struct {
	Daemon string `json:"daemon"`
	// Error says why this refresh of --watch has no sample (the rest is empty).
	Error  string `json:"error,omitempty"`
	Uptime string `json:"uptime"`
	// IntervalSeconds is the time between the two samples on the daemon's clock; 0 when
	// the daemon restarted between them (rates are then 0 and CPU % is since start).
	IntervalSeconds float64             `json:"interval_seconds"`
	Policy          daemon.PolicyStatus `json:"policy"`
	Ports           []portReport        `json:"ports"`
	Threads         []threadReport      `json:"threads"`
}

// portReport is one port: its status with rates, and the frames its RX queues could
// not forward (the peer's TX queue was full).
type portReport struct {
	daemon.PortStatus
	RxPerSecond    float64 `json:"rx_packets_per_second"`
	TxPerSecond    float64 `json:"tx_packets_per_second"`
	Drops          uint64  `json:"drops"`
	DropsPerSecond float64 `json:"drops_per_second"`
}

// threadReport is one poll thread: its status, the queues it polls, CPU use and wake-ups
// per second over the interval.
type threadReport struct {
	daemon.ThreadStatus
	Queues []string `json:"queues"`
	// CPUPercent is over the interval (shadows the status's since-start figure).
	CPUPercent       float64   `json:"cpu_percent"`
	SleepsPerSecond  float64   `json:"sleeps_per_second"`
	WakeupsPerSecond wakeRates `json:"wakeups_per_second"`
	// StallsPerSecond and StalledPercent are the thread's stalls (polls that came over
	// idle.StallThreshold late) over the interval, and their share of it.
	StallsPerSecond float64 `json:"stalls_per_second"`
	StalledPercent  float64 `json:"stalled_percent"`
}

// wakeRates are wake-ups per second by cause.
type wakeRates struct {
	Interrupt float64 `json:"interrupt"`
	Timeout   float64 `json:"timeout"`
	Predicted float64 `json:"predicted"`
	Stop      float64 `json:"stop"`
	Spurious  float64 `json:"spurious"`
}

// newStatusReport builds the report of cur with rates since prev. Counters that went
// backwards (a restart) give no rate.
func newStatusReport(base string, prev, cur daemon.Status) statusReport {
	r := statusReport{Daemon: base, Uptime: cur.Uptime, Policy: cur.Policy, Ports: []portReport{}, Threads: []threadReport{}}
	dt := cur.UptimeSeconds - prev.UptimeSeconds
	if dt <= 0 || prev.UptimeSeconds == 0 {
		dt = 0
	}
	r.IntervalSeconds = dt
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
		pr := portReport{PortStatus: p, Drops: drops(cur, p.Name)}
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
		tr := threadReport{ThreadStatus: t, Queues: []string{}, CPUPercent: t.CPUPercent}
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

// writeText writes the report as two tables.
func (r statusReport) writeText(w io.Writer) {
	over := "since start"
	if r.IntervalSeconds > 0 {
		over = fmt.Sprintf("over %.1fs", r.IntervalSeconds)
	}
	fmt.Fprintf(w, "uiod at %s, up %s; poll %s, idle_threshold %s, wait_timeout %s, %s; rates %s\n\n",
		r.Daemon, r.Uptime, r.Policy.Mode, r.Policy.IdleThreshold, r.Policy.WaitTimeout, r.Policy.App, over)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PORT\tPCI\tDRIVER\tLINK\tRX/s\tTX/s\tRX\tTX\tMISSED\tERRORS\tDROPS\tDROPS/s")
	for _, p := range r.Ports {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.PCI, p.Driver, linkText(p.LinkUp, p.SpeedMbps),
			perSecond(p.RxPerSecond), perSecond(p.TxPerSecond), p.Stats.RxPackets, p.Stats.TxPackets,
			p.Stats.RxMissed, p.Stats.RxErrors+p.Stats.TxErrors, p.Drops, perSecond(p.DropsPerSecond))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tCPU\tSTATE\tCPU%\tSLEEPS/s\tWAKE/s IRQ\tTIMEOUT\tPREDICTED\tSPURIOUS\tSTALLS/s\tSTALLED%\tTHRESHOLD\tGAP EST\tWAKE COST\tPERIOD\tLEAD\tQUEUES")
	for _, t := range r.Threads {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Index, cpuText(t.CPU), t.State, t.CPUPercent,
			perSecond(t.SleepsPerSecond), perSecond(t.WakeupsPerSecond.Interrupt), perSecond(t.WakeupsPerSecond.Timeout),
			perSecond(t.WakeupsPerSecond.Predicted), perSecond(t.WakeupsPerSecond.Spurious),
			perSecond(t.StallsPerSecond), t.StalledPercent,
			dash(t.Threshold), dash(t.GapEstimate), dash(t.WakeCost), dash(t.Period), dash(t.Lead), strings.Join(t.Queues, ","))
	}
	tw.Flush()
}

// linkText is "up 10G", "up", or "down".
func linkText(up bool, mbps int) string {
	switch {
	case !up:
		return "down"
	case mbps >= 1000 && mbps%1000 == 0:
		return "up " + strconv.Itoa(mbps/1000) + "G"
	case mbps > 0:
		return "up " + strconv.Itoa(mbps) + "M"
	}
	return "up"
}

// perSecond prints a rate with a k/M suffix above a thousand.
func perSecond(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func cpuText(cpu int) string {
	if cpu < 0 {
		return "-"
	}
	return strconv.Itoa(cpu)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// statusWidth is the terminal width the tables of `uiod status` fit without --wide.
const statusWidth = 80

// writeText writes the report as a heading and two tables, ports and poll threads. They
// fit statusWidth columns; wide adds the columns that do not (totals, MAC, the backend,
// every wake-up cause and the auto policy's estimates).
func (r statusReport) writeText(w io.Writer, wide bool) {
	over := "since start"
	if r.IntervalSeconds > 0 {
		over = fmt.Sprintf("over %.1fs", r.IntervalSeconds)
	}
	threshold := r.Policy.IdleThreshold
	version := ""
	if r.Version != "" {
		version = ", version " + r.Version
	}
	fmt.Fprintf(w, "uiod at %s, up %s, rates %s%s\n", r.Daemon, durText(r.UptimeSeconds).Round(time.Second/10), over, version)
	fmt.Fprintf(w, "poll %s, idle_threshold %s, wait_timeout %s, forward %s\n\n",
		r.Policy.Mode, threshold, r.Policy.WaitTimeout, r.Policy.App)
	width := statusWidth
	if wide {
		width = 0
	}
	var pt *textTable
	if wide {
		pt = newTextTable("PORT", "PCI", "DRIVER", "NIC", "MAC", "LINK", "RX/s#", "TX/s#", "RX#", "TX#", "MISSED#", "ERRORS#", "DROPS#", "DROPS/s#")
	} else {
		pt = newTextTable("PORT", "PCI", "NIC", "LINK", "RX/s#", "TX/s#", "MISSED#", "ERRORS#", "DROPS/s#")
	}
	for _, p := range r.Ports {
		link := linkText(p.LinkUp, p.SpeedMbps)
		errs := count(p.Stats.RxErrors + p.Stats.TxErrors)
		if wide {
			pt.add(p.Name, p.PCI, p.Driver, dash(p.NIC), p.MAC, link, perSecond(p.RxPerSecond), perSecond(p.TxPerSecond),
				count(p.Stats.RxPackets), count(p.Stats.TxPackets), count(p.Stats.RxMissed), errs, count(p.Drops), perSecond(p.DropsPerSecond))
		} else {
			pt.add(p.Name, p.PCI, dash(p.NIC), link, perSecond(p.RxPerSecond), perSecond(p.TxPerSecond),
				count(p.Stats.RxMissed), errs, perSecond(p.DropsPerSecond))
		}
	}
	pt.write(w, width)
	r.writeDrops(w, width)
	fmt.Fprintln(w)
	var tt *textTable
	if wide {
		tt = newTextTable("THREAD#", "CPU#", "STATE", "CPU%#", "SLEEPS/s#", "IRQ/s#", "TIMEOUT/s#", "PREDICTED/s#", "SPURIOUS/s#",
			"STALLS/s#", "STALLED%#", "YIELDS/s#", "THRESHOLD#", "GAP#", "WAKECOST#", "PERIOD#", "LEAD#", "QUEUES")
	} else {
		tt = newTextTable("THREAD#", "CPU#", "STATE", "CPU%#", "IRQ/s#", "SLEEPS/s#", "STALLED%#", "THRESHOLD#", "QUEUES")
	}
	for _, t := range r.Threads {
		cpu, pct, queues := cpuText(t.CPU), strconv.FormatFloat(t.CPUPercent, 'f', 1, 64), strings.Join(t.Queues, ",")
		stalled := strconv.FormatFloat(t.StalledPercent, 'f', 2, 64)
		if wide {
			wr := t.WakeupsPerSecond
			tt.add(strconv.Itoa(t.Index), cpu, t.State, pct, perSecond(t.SleepsPerSecond), perSecond(wr.Interrupt), perSecond(wr.Timeout),
				perSecond(wr.Predicted), perSecond(wr.Spurious), perSecond(t.StallsPerSecond), stalled, perSecond(t.RuntimeYieldsPerSecond), durText(t.ThresholdSeconds).String(),
				optDur(t.GapEstimateSeconds), optDur(t.WakeCostSeconds), optDur(t.PeriodSeconds), optDur(t.LeadSeconds), queues)
		} else {
			tt.add(strconv.Itoa(t.Index), cpu, t.State, pct, perSecond(t.WakeupsPerSecond.Interrupt), perSecond(t.SleepsPerSecond),
				stalled, durText(t.ThresholdSeconds).String(), queues)
		}
	}
	tt.write(w, width)
	r.writeRxWaits(w, width)
	r.writeBridge(w, width)
	r.writeFIB(w)
}

// writeDrops prints, under the ports, each port's drops since start by reason, when any
// frame was dropped: the reasons /status and /metrics count (no_route, tx_full, ...).
func (r statusReport) writeDrops(w io.Writer, width int) {
	t := newTextTable("PORT", "REASON", "DROPPED#")
	rows := 0
	for _, p := range r.Ports {
		reasons := make([]string, 0, len(p.DropsBy))
		for reason := range p.DropsBy {
			reasons = append(reasons, reason)
		}
		slices.Sort(reasons)
		for _, reason := range reasons {
			t.add(p.Name, reason, count(p.DropsBy[reason]))
			rows++
		}
	}
	if rows == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "drops since start, by reason")
	t.write(w, width)
}

// durText is a number of seconds as a duration, rounded to what a person reads: 1 µs
// from 1 ms up, else 100 ns.
func durText(sec float64) time.Duration {
	d := time.Duration(sec * float64(time.Second))
	if d >= time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}

// optDur is durText of an estimate the policy may not have yet ("-").
func optDur(sec *float64) string {
	if sec == nil {
		return "-"
	}
	return durText(*sec).String()
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

// perSecond prints a rate with a k/M suffix above ten thousand.
func perSecond(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// count prints a counter.
func count(n uint64) string { return strconv.FormatUint(n, 10) }

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

package daemon

import (
	"net/http"
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves the daemon's metrics, the Go runtime's and the process's in the
// Prometheus text format.
func (d *Daemon) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), &collector{d: d}, routerCollector{d})
	reg.MustRegister(d.opts.Collectors...)
	if d.isBridge() {
		reg.MustRegister(bridgeCollector{d})
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

var (
	portLabels   = []string{"port"}
	queueLabels  = []string{"queue", "thread"}
	threadLabels = []string{"thread", "cpu"}

	mPortRx         = prometheus.NewDesc("uiod_port_rx_packets_total", "Frames received by the NIC.", portLabels, nil)
	mPortRxBytes    = prometheus.NewDesc("uiod_port_rx_bytes_total", "Bytes received by the NIC.", portLabels, nil)
	mPortTx         = prometheus.NewDesc("uiod_port_tx_packets_total", "Frames sent by the NIC.", portLabels, nil)
	mPortTxBytes    = prometheus.NewDesc("uiod_port_tx_bytes_total", "Bytes sent by the NIC.", portLabels, nil)
	mPortMissed     = prometheus.NewDesc("uiod_port_rx_missed_total", "Frames the NIC dropped for lack of a free RX descriptor.", portLabels, nil)
	mPortRxErrors   = prometheus.NewDesc("uiod_port_rx_errors_total", "Bad RX write-backs the driver refused.", portLabels, nil)
	mPortTxErrors   = prometheus.NewDesc("uiod_port_tx_errors_total", "TX errors.", portLabels, nil)
	mPortTxTimeouts = prometheus.NewDesc("uiod_port_tx_timeouts_total", "TX queues found hung (no write-back within twice the TX timeout) and reset.", portLabels, nil)
	mPortResets     = prometheus.NewDesc("uiod_port_device_resets_total", "Device resets the driver did to recover a broken device (virtio DEVICE_NEEDS_RESET) or to follow its PF (igbvf: a PF reset).", portLabels, nil)
	mPortLink       = prometheus.NewDesc("uiod_port_link_up", "1 if the port's link is up.", portLabels, nil)
	mPortPresent    = prometheus.NewDesc("uiod_port_present", "1 if the port's device is open, 0 while the kernel has it (requested for an unbind or remove) and it is not back.", portLabels, nil)
	mPortRemovals   = prometheus.NewDesc("uiod_port_removals_total", "Times the kernel requested the port's device and uiod released it.", portLabels, nil)
	mPortReopens    = prometheus.NewDesc("uiod_port_reopens_total", "Times the port's device came back and uiod re-opened it.", portLabels, nil)

	mQueueRx     = prometheus.NewDesc("uiod_queue_rx_packets_total", "Frames taken from the RX queue.", queueLabels, nil)
	mQueueRxB    = prometheus.NewDesc("uiod_queue_rx_bytes_total", "Bytes taken from the RX queue.", queueLabels, nil)
	mQueueTx     = prometheus.NewDesc("uiod_queue_tx_packets_total", "Frames from the RX queue that TX queues accepted.", queueLabels, nil)
	mQueueKernel = prometheus.NewDesc("uiod_queue_to_kernel_packets_total", "Frames from the RX queue that the port's kernel exception path accepted.", queueLabels, nil)
	mQueueDrops  = prometheus.NewDesc("uiod_queue_drops_total", "Frames from the RX queue freed instead of sent, for any reason.", queueLabels, nil)
	mQueueDropsR = prometheus.NewDesc("uiod_queue_drops_by_reason_total", "Frames from the RX queue freed instead of sent, by reason (tx_full, no_route, ...).", append(queueLabels, "reason"), nil)
	mQueuePolls  = prometheus.NewDesc("uiod_queue_polls_total", "RX bursts.", queueLabels, nil)
	mQueueEmpty  = prometheus.NewDesc("uiod_queue_empty_polls_total", "RX bursts that found nothing.", queueLabels, nil)
	mThreadCPU   = prometheus.NewDesc("uiod_thread_cpu_seconds_total", "Poll thread CPU time (CLOCK_THREAD_CPUTIME_ID).", threadLabels, nil)
	mThreadWall  = prometheus.NewDesc("uiod_thread_wall_seconds_total", "Time since the poll thread started.", threadLabels, nil)
	mArms        = prometheus.NewDesc("uiod_thread_arms_total", "Times the thread armed its queues' interrupts.", threadLabels, nil)
	mArmRaces    = prometheus.NewDesc("uiod_thread_arm_races_total", "Re-polls after arming that found frames (the race the re-poll closes).", threadLabels, nil)
	mSleeps      = prometheus.NewDesc("uiod_thread_sleeps_total", "Waits in epoll or range sleeps.", threadLabels, nil)
	mWakeups     = prometheus.NewDesc("uiod_thread_wakeups_total", "Wake-ups from a sleep, by cause: interrupt, timeout, stop, or predicted (auto's timer ahead of a periodic frame).", append(threadLabels, "cause"), nil)
	mSpurious    = prometheus.NewDesc("uiod_thread_spurious_wakeups_total", "Interrupt wake-ups whose next poll found nothing (included in the interrupt wake-ups).", threadLabels, nil)
	mAsleep      = prometheus.NewDesc("uiod_thread_asleep_seconds_total", "Time asleep.", threadLabels, nil)
	mYields      = prometheus.NewDesc("uiod_thread_housekeeping_yields_total", "Housekeeping yields.", threadLabels, nil)
	mDeepSleeps  = prometheus.NewDesc("uiod_thread_deep_sleeps_total", "Waits in deep idle, blocking through the Go scheduler (included in the sleeps).", threadLabels, nil)
	mStalls      = prometheus.NewDesc("uiod_thread_stalls_total", "Empty polls that came over 20 µs after the previous turn without a sleep or yield between: the thread was kept from polling.", threadLabels, nil)
	mStallTime   = prometheus.NewDesc("uiod_thread_stall_seconds_total", "Total time of the stalls.", threadLabels, nil)
	mGoYields    = prometheus.NewDesc("uiod_thread_runtime_yields_total", "Yields to the Go scheduler at an empty poll after 8 ms of polling without a break, with UIOD_RUNTIME_YIELD on (instead of the runtime's forced preemption).", threadLabels, nil)
	mGoYieldTime = prometheus.NewDesc("uiod_thread_runtime_yield_seconds_total", "Total time of the yields to the Go scheduler.", threadLabels, nil)
	mThreadMoves = prometheus.NewDesc("uiod_thread_changes_total", "Yields after which the poll goroutine ran on another OS thread, which it pinned again.", threadLabels, nil)
	mIdleErrors  = prometheus.NewDesc("uiod_thread_idle_errors_total", "Failed waits and drains.", threadLabels, nil)
	mThreshold   = prometheus.NewDesc("uiod_thread_idle_threshold_seconds", "Idle threshold in force (auto: the current decision).", threadLabels, nil)
	mGapEstimate = prometheus.NewDesc("uiod_thread_gap_estimate_seconds", "Auto policy: running estimate of the inter-arrival gap.", threadLabels, nil)
	mWakeCost    = prometheus.NewDesc("uiod_thread_wake_cost_seconds", "Auto policy: running estimate of one arm-sleep-wake cycle.", threadLabels, nil)
	mPredictHits = prometheus.NewDesc("uiod_thread_predicted_caught_total", "Auto policy: predicted wake-ups after which the frame was caught by polling.", threadLabels, nil)
	mPeriod      = prometheus.NewDesc("uiod_thread_predicted_period_seconds", "Auto policy: the gap periodic traffic is predicted by (0: not predicting).", threadLabels, nil)
	mBuildInfo   = prometheus.NewDesc("uiod_build_info", "Always 1: the daemon's version, VCS revision and Go version as labels.", []string{"version", "revision", "goversion"}, nil)
	mLead        = prometheus.NewDesc("uiod_thread_predicted_lead_seconds", "Auto policy: how long before a predicted frame the timer wakes the thread.", threadLabels, nil)
)

// collector turns Status into Prometheus metrics at scrape time.
type collector struct{ d *Daemon }

// describe sends ds to a collector's Describe channel.
func describe(ch chan<- *prometheus.Desc, ds ...*prometheus.Desc) {
	for _, d := range ds {
		ch <- d
	}
}

// scrape is a collector's Collect channel, with the ways the daemon's metrics are sent on it.
type scrape chan<- prometheus.Metric

func (s scrape) counter(d *prometheus.Desc, v float64, l ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
}

func (s scrape) gauge(d *prometheus.Desc, v float64, l ...string) {
	s <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
}

// flag is a gauge of 1 while on, else 0.
func (s scrape) flag(d *prometheus.Desc, on bool, l ...string) {
	v := 0.0
	if on {
		v = 1
	}
	s.gauge(d, v, l...)
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, mPortRx, mPortRxBytes, mPortTx, mPortTxBytes, mPortMissed, mPortRxErrors, mPortTxErrors, mPortTxTimeouts, mPortResets, mPortLink, mPortPresent, mPortRemovals, mPortReopens,
		mQueueRx, mQueueRxB, mQueueTx, mQueueKernel, mQueueDrops, mQueueDropsR, mQueuePolls, mQueueEmpty, mThreadCPU, mThreadWall, mArms, mArmRaces,
		mSleeps, mWakeups, mSpurious, mAsleep, mYields, mDeepSleeps, mStalls, mStallTime, mGoYields, mGoYieldTime, mThreadMoves, mIdleErrors, mThreshold, mGapEstimate, mWakeCost, mPredictHits, mPeriod, mLead, mBuildInfo, mRxWait, mRxWaitLost,
		mTAPMTURefused, mTAPMACRefused, mTAPDownDrops, mTAPCarrier)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.d.Status()
	m := scrape(ch)
	m.gauge(mBuildInfo, 1, st.Version, st.Revision, runtime.Version())
	for _, p := range st.Ports {
		if k := p.Kernel; k != nil {
			// The kernel path as a port of its own, named after its port.
			m.counter(mPortRx, float64(k.Stats.RxPackets), p.Name+"/kernel")
			m.counter(mPortTx, float64(k.Stats.TxPackets), p.Name+"/kernel")
			m.counter(mPortMissed, float64(k.Stats.RxMissed), p.Name+"/kernel")
			m.counter(mPortTxErrors, float64(k.Stats.TxErrors), p.Name+"/kernel")
			if f := k.Follow; f != nil { // tapfollow.go
				collectTAPFollow(m, f, p.Name)
			}
		}
		s := p.Stats
		m.counter(mPortRx, float64(s.RxPackets), p.Name)
		m.counter(mPortRxBytes, float64(s.RxBytes), p.Name)
		m.counter(mPortTx, float64(s.TxPackets), p.Name)
		m.counter(mPortTxBytes, float64(s.TxBytes), p.Name)
		m.counter(mPortMissed, float64(s.RxMissed), p.Name)
		m.counter(mPortRxErrors, float64(s.RxErrors), p.Name)
		m.counter(mPortTxErrors, float64(s.TxErrors), p.Name)
		m.counter(mPortTxTimeouts, float64(s.TxTimeouts), p.Name)
		m.counter(mPortResets, float64(s.DeviceResets), p.Name)
		m.flag(mPortLink, p.LinkUp, p.Name)
		m.flag(mPortPresent, !p.Absent, p.Name)
		m.counter(mPortRemovals, float64(p.Removals), p.Name)
		m.counter(mPortReopens, float64(p.Reopens), p.Name)
	}
	for _, q := range st.Queues {
		t := strconv.Itoa(q.Thread)
		m.counter(mQueueRx, float64(q.RxPackets), q.Name, t)
		m.counter(mQueueRxB, float64(q.RxBytes), q.Name, t)
		m.counter(mQueueTx, float64(q.TxPackets), q.Name, t)
		m.counter(mQueueKernel, float64(q.ToKernel), q.Name, t)
		m.counter(mQueueDrops, float64(q.Drops), q.Name, t)
		for r, n := range q.DropsBy {
			m.counter(mQueueDropsR, float64(n), q.Name, t, r)
		}
		m.counter(mQueuePolls, float64(q.Polls), q.Name, t)
		m.counter(mQueueEmpty, float64(q.EmptyPolls), q.Name, t)
	}
	collectRxWaits(m, st)
	c.d.mu.Lock()
	dp := c.d.dp
	c.d.mu.Unlock()
	if dp == nil {
		return
	}
	for _, t := range dp.Threads() {
		l := []string{strconv.Itoa(t.Index), strconv.Itoa(t.CPU)}
		m.counter(mThreadCPU, t.CPUTime.Seconds(), l...)
		m.counter(mThreadWall, t.WallTime.Seconds(), l...)
		m.counter(mArms, float64(t.Idle.Arms), l...)
		m.counter(mArmRaces, float64(t.Idle.ArmRaces), l...)
		m.counter(mSleeps, float64(t.Idle.Sleeps), l...)
		m.counter(mWakeups, float64(t.Idle.WakeInterrupt), append(l, "interrupt")...)
		m.counter(mWakeups, float64(t.Idle.WakeTimeout), append(l, "timeout")...)
		m.counter(mWakeups, float64(t.Idle.WakeStop), append(l, "stop")...)
		m.counter(mWakeups, float64(t.Idle.WakePredicted), append(l, "predicted")...)
		m.counter(mPredictHits, float64(t.Idle.PredictHits), l...)
		m.counter(mSpurious, float64(t.Idle.WakeSpurious), l...)
		m.counter(mAsleep, t.Idle.Asleep.Seconds(), l...)
		m.counter(mYields, float64(t.Idle.Yields), l...)
		m.counter(mDeepSleeps, float64(t.Idle.DeepSleeps), l...)
		m.counter(mStalls, float64(t.Idle.Stalls), l...)
		m.counter(mStallTime, t.Idle.StallTime.Seconds(), l...)
		m.counter(mGoYields, float64(t.RuntimeYields), l...)
		m.counter(mGoYieldTime, t.RuntimeYieldTime.Seconds(), l...)
		m.counter(mThreadMoves, float64(t.ThreadChanges), l...)
		m.counter(mIdleErrors, float64(t.Idle.Errors), l...)
		m.gauge(mThreshold, t.Idle.Threshold.Seconds(), l...)
		m.gauge(mGapEstimate, t.Idle.GapEstimate.Seconds(), l...)
		m.gauge(mWakeCost, t.Idle.WakeCost.Seconds(), l...)
		m.gauge(mPeriod, t.Idle.Period.Seconds(), l...)
		m.gauge(mLead, t.Idle.Lead.Seconds(), l...)
	}
}

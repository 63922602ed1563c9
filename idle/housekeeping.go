package idle

// housekeeping schedules the yields of PolicyConfig.HousekeepingHz: a yield is due a
// period after the previous one started and overdue a quarter period later. Times in ns;
// a zero period turns it off.
type housekeeping struct {
	period, length  int64
	dueAt, deadline int64
	slept           int64 // sleep time since the last yield
}

func (h *housekeeping) init(cfg PolicyConfig, now int64) {
	if cfg.HousekeepingHz <= 0 {
		return
	}
	h.period = int64(1e9) / int64(cfg.HousekeepingHz)
	h.length = int64(cfg.HousekeepingLength)
	h.schedule(now)
}

// due reports whether a yield is due at an empty poll at now.
func (h *housekeeping) due(now int64) bool { return h.period > 0 && now >= h.dueAt }

// overdue reports whether a yield is overdue at now, even under traffic.
func (h *housekeeping) overdue(now int64) bool { return h.period > 0 && now >= h.deadline }

// schedule sets the next yield a period after from.
func (h *housekeeping) schedule(from int64) {
	h.slept = 0
	h.dueAt = from + h.period
	h.deadline = h.dueAt + h.period/4
}

// slept records a sleep of ns that ended at end: it is the thread's last rest (RestEnd),
// and it counts to housekeeping, since the CPU was given away anyway and sleeping as long
// as a yield replaces it.
func (d *Idler) slept(ns, end int64) {
	d.restEnd = end
	h := &d.hk
	if h.period == 0 {
		return
	}
	h.slept += ns
	if h.slept >= h.length {
		h.schedule(end)
	}
}

// yield gives the CPU away for HousekeepingLength at the poll at time now, from which the
// next yield is scheduled. It uses the ordinary nanosleep, which lets the runtime hand
// this thread's P to other goroutines meanwhile. It returns the time the yield ended.
func (d *Idler) yield(now int64) int64 {
	d.st.Store(int32(Yielding))
	t0 := Now()
	sleepReleasingP(d.hk.length)
	t1 := Now()
	d.st.Store(int32(Polling))
	d.c.yields.Add(1)
	d.c.yieldNs.Add(uint64(t1 - t0))
	d.hk.schedule(now)
	d.restEnd = t1
	return t1
}

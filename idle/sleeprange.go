package idle

// sleepRange is SleepRange at an empty poll: it sleeps a random time in [SleepMin,
// SleepMax] without giving the P away, and returns the time it woke.
func (d *Idler) sleepRange() int64 {
	ns := d.randSleep()
	d.st.Store(int32(Yielding))
	t0 := Now()
	sleepHoldingP(ns)
	t1 := Now()
	d.st.Store(int32(Polling))
	d.c.sleeps.Add(1)
	d.c.asleepNs.Add(uint64(t1 - t0))
	d.slept(t1-t0, t1)
	return t1
}

// randSleep draws a duration in [SleepMin, SleepMax] ns with xorshift64*.
func (d *Idler) randSleep() int64 {
	d.rng ^= d.rng >> 12
	d.rng ^= d.rng << 25
	d.rng ^= d.rng >> 27
	r := d.rng * 2685821657736338717
	span := uint64(d.cfg.SleepMax-d.cfg.SleepMin) + 1
	return int64(d.cfg.SleepMin) + int64(r%span)
}

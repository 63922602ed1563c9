package idle

// RestEnd is when the thread last came back from giving its CPU away inside the Idler
// (a wait, a range sleep or a housekeeping yield), as Now reads it; 0 if it never did.
// The polling thread's loop uses it to tell how long it has polled without a break.
// Only the polling thread may call it.
func (d *Idler) RestEnd() int64 { return d.restEnd }

// Rested tells the Idler that the thread gave its CPU away outside it, between two
// turns, until end (the dataplane's yield to the Go scheduler): the gap before its next
// poll is no stall (Stats.Stalls). Only the polling thread may call it.
func (d *Idler) Rested(end int64) { d.turnEnd = end }

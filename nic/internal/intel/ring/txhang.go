package ring

import "time"

// TX hang detection, after Linux's ixgbe_check_tx_hang (no completion and descriptors
// pending on two checks in a row): a check takes a baseline (the completions so far and
// the time) and a later check that finds descriptors still pending, no completion since
// the baseline and the baseline at least twice the timeout old declares the queue hung.
// Checks run from Burst at most once per timeout, only when descriptors are pending and
// the burst reclaimed none, and read the clock at most once. A hung queue takes no frames
// until the port has reset it (Recover).

// clockBase is the origin of the default clock.
var clockBase = time.Now()

// monotonic is the default clock: nanoseconds on the monotonic clock.
func monotonic() int64 { return int64(time.Since(clockBase)) }

// hangCheck is one TX queue's hang detector state. Only the queue's owner touches it.
type hangCheck struct {
	timeout int64        // check interval in ns; 0 disables detection
	now     func() int64 // clock in ns
	checkAt int64        // earliest time of the next check (or reset retry)
	done    uint64       // descriptors reclaimed since the queue was created
	based   bool         // a baseline was taken: mark and since are valid
	mark    uint64       // completions at the baseline
	since   int64        // time of the baseline
	hung    bool         // a hang was detected and the queue is not reset yet
	retry   bool         // a reset failed: retry it at checkAt
}

func newHangCheck(timeout time.Duration, now func() int64) hangCheck {
	if now == nil {
		now = monotonic
	}
	return hangCheck{timeout: int64(timeout), now: now}
}

// stalled runs a check if one is due and reports whether it found the queue hung: no
// completion since a baseline at least twice the timeout old. A check that finds
// completions since the baseline (or none taken) takes a new one. Call it only with
// descriptors pending.
func (h *hangCheck) stalled() bool {
	now := h.now()
	if now < h.checkAt {
		return false
	}
	h.checkAt = now + h.timeout
	if !h.based || h.done != h.mark {
		h.based, h.mark, h.since = true, h.done, now
		return false
	}
	return now-h.since >= 2*h.timeout
}

// Hung reports whether the queue is hung and its reset is due: at once after the hang was
// detected, and a timeout after a failed reset.
func (q *TxQueue) Hung() bool {
	if !q.hang.hung {
		return false
	}
	return !q.hang.retry || q.hang.now() >= q.hang.checkAt
}

// ResetFailed records that the port could not reset the hung queue: it keeps refusing
// frames and Hung reports it again after the timeout.
func (q *TxQueue) ResetFailed() {
	q.hang.hung, q.hang.retry = true, true
	q.hang.checkAt = q.hang.now() + q.hang.timeout
}

// Recover takes the ring back after the port disabled the hung queue: head is the
// hardware head (TDH) the queue stopped at. The frames of descriptors from head to the
// tail were never fetched by the NIC and are counted as discarded; every queued buffer
// goes back to its pool and the ring is empty, ready to be programmed again with head
// and tail 0. Call it only with the queue disabled.
func (q *TxQueue) Recover(head uint32) {
	inflight := (q.tail - q.clean) & q.mask
	fetched := (head - q.clean) & q.mask
	if head > q.mask || fetched > inflight {
		fetched = 0 // a head outside the queued range: count every frame as discarded
	}
	q.discarded.Add(uint64(inflight - fetched))
	q.Release()
	q.hang = hangCheck{timeout: q.hang.timeout, now: q.hang.now, done: q.hang.done}
}

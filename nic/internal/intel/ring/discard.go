package ring

// Discard takes the ring back after the NIC's queue was reset under it (a VF reset,
// which zeroes the queue's head and tail but leaves host memory alone): the buffers of
// descriptors the NIC completed before the reset (DD written back) are freed as sent,
// the frames of the others are counted as discarded, and the ring is empty, ready to be
// programmed again with head and tail 0. Call it only with the queue disabled, from the
// queue's owner.
func (q *TxQueue) Discard() {
	q.Reclaim()
	q.Recover(q.clean) // nothing fetched past the completed ones: the rest is discarded
}

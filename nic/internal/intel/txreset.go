package intel

import "github.com/uiod/uiod/internal/hw/intelnic"

// resetTx recovers hung TX queue q the way Linux resets a ring (ixgbe_disable_txr_hw,
// ixgbe_clean_tx_ring and ixgbe_configure_tx_ring; igb_configure_tx_ring; DPDK's
// ixgbe_dev_tx_queue_stop/start): clear TXDCTL.ENABLE and poll until it reads 0, take the
// head the queue stopped at, free every queued buffer (frames past the head were never
// fetched and count as discarded), program the ring again with head and tail 0, and set
// ENABLE with the queue's thresholds and poll until it reads 1. It reports whether the
// queue runs again; if not, the ring keeps refusing frames and retries after the timeout.
// A queue that does not stop keeps its buffers: the NIC may still read them.
func (p *Port) resetTx(q int) bool {
	r, t := p.bar, p.tx[q]
	ctl := p.layout.txReg(q, intelnic.QDCTL)
	v := r.Read32(ctl)
	r.Write32(ctl, v&^intelnic.DctlEnable)
	if err := WaitClear(r, ctl, intelnic.DctlEnable, txResetTimeout); err != nil {
		t.ResetFailed()
		return false
	}
	t.Recover(r.Read32(p.layout.txReg(q, intelnic.QH)))
	ProgramTxRing(p, q)
	r.Write32(ctl, v|intelnic.DctlEnable)
	if err := WaitSet(r, ctl, intelnic.DctlEnable, txResetTimeout); err != nil {
		t.ResetFailed()
		return false
	}
	return true
}

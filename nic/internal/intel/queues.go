package intel

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/intel/ring"
)

// A queue's register block, the same on the 82599 and the 82576: base address, length,
// head, tail and control, at these offsets from the block's start.
const (
	queueStopTimeout = 10 * time.Millisecond
	// txResetTimeout bounds each register wait of a TX queue reset.
	txResetTimeout = 100 * time.Millisecond
)

func (l *Layout) rxReg(q int, reg uint32) uint32 { return l.RxQueue + intelnic.QStride*uint32(q) + reg }
func (l *Layout) txReg(q int, reg uint32) uint32 { return l.TxQueue + intelnic.QStride*uint32(q) + reg }

// AllocQueues allocates one mempool and RX ring per configured RX queue and the TX rings,
// each ring ringing its queue's tail register.
func AllocQueues(p *Port) error {
	dma := p.dev.DMA()
	for q := 0; q < p.cfg.RxQueues; q++ {
		pool, err := nic.NewMempool(dma, p.cfg.PoolSize, p.cfg.BufSize)
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", q, err)
		}
		p.pools = append(p.pools, pool)
		rq, err := ring.NewRxQueue(ring.RxConfig{DMA: dma, Pool: pool, Size: p.cfg.RxRing, Tail: ring.Doorbell{Reg: p.bar, Off: p.layout.rxReg(q, intelnic.QT)}, MTU: p.cfg.MTU})
		if err != nil {
			return fmt.Errorf("rx queue %d: %w", q, err)
		}
		p.rx = append(p.rx, rq)
	}
	for q := 0; q < p.cfg.TxQueues; q++ {
		tq, err := ring.NewTxQueue(ring.TxConfig{DMA: dma, Size: p.cfg.TxRing, Tail: ring.Doorbell{Reg: p.bar, Off: p.layout.txReg(q, intelnic.QT)}, BufSize: p.cfg.BufSize, Timeout: p.cfg.TxTimeout, MTU: p.cfg.MTU})
		if err != nil {
			return fmt.Errorf("tx queue %d: %w", q, err)
		}
		p.tx = append(p.tx, tq)
	}
	return nil
}

// StartQueues allocates the queues (AllocQueues), turns bus mastering on
// (EnableBusMaster) and runs steps in order (igbvf's receive init, transmit init and
// interrupts).
func StartQueues(p *Port, steps ...func() error) error {
	if err := AllocQueues(p); err != nil {
		return err
	}
	if err := EnableBusMaster(p); err != nil {
		return err
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// ProgramRxRing writes RX queue q's ring address and length and zeroes its head and tail.
func ProgramRxRing(p *Port, q int) {
	rq := p.rx[q]
	programRing(p, p.layout.RxQueue+intelnic.QStride*uint32(q), rq.IOVA(), rq.Len())
}

// ProgramTxRing writes TX queue q's ring address and length and zeroes its head and tail.
func ProgramTxRing(p *Port, q int) {
	tq := p.tx[q]
	programRing(p, p.layout.TxQueue+intelnic.QStride*uint32(q), tq.IOVA(), tq.Len())
}

func programRing(p *Port, block uint32, iova uint64, size int) {
	r := p.bar
	r.Write32(block+intelnic.QBAL, uint32(iova))
	r.Write32(block+intelnic.QBAH, uint32(iova>>32))
	r.Write32(block+intelnic.QLEN, uint32(size))
	r.Write32(block+intelnic.QH, 0)
	r.Write32(block+intelnic.QT, 0)
}

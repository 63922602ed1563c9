package virtio

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
)

// ctrlQueue is the control virtqueue. Commands are rare (at open, and when the port's
// user sets its receive filter), so one command is in flight at a time (mu) and the
// driver polls for its completion; the data path never touches it. A command (class,
// command, data) is one device-readable descriptor at the start of buf, the device's
// ack one writable byte at ctrlAckOff.
type ctrlQueue struct {
	vq
	mu       sync.Mutex // one command at a time
	buf      pci.Mem    // the command and the ack, in DMA memory
	lastUsed uint16
}

// ctrlTimeout bounds the wait for the device to answer a control command.
const ctrlTimeout = time.Second

// ctrlBufLen is the control buffer's size: the longest command (a filter table of
// maxMACTable addresses: class, command, two counts, the addresses) and the ack.
const (
	ctrlBufLen = 512
	ctrlAckOff = ctrlBufLen - 8
)

// command sends class/cmd with data and waits for the device's ack.
func (q *ctrlQueue) command(class, cmd uint8, data []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, buf := q.ring, q.buf.Bytes
	if 2+len(data) > ctrlAckOff {
		return fmt.Errorf("control command %d/%d: %d bytes of data", class, cmd, len(data))
	}
	buf[0], buf[1] = class, cmd
	copy(buf[2:], data)
	buf[ctrlAckOff] = 0xff
	base := q.buf.IOVA
	r.setDesc(0, base, uint32(2+len(data)), virtiospec.DescNext, 1)
	r.setDesc(1, base+ctrlAckOff, 1, virtiospec.DescWrite, 0)
	old := r.availIdx
	r.push(0)
	r.publish()
	q.kick(old)
	deadline := time.Now().Add(ctrlTimeout)
	for r.usedIdx() == q.lastUsed {
		if time.Now().After(deadline) {
			return fmt.Errorf("control command %d/%d: no answer in %v", class, cmd, ctrlTimeout)
		}
		time.Sleep(10 * time.Microsecond)
	}
	id, n := r.usedElem(q.lastUsed)
	q.lastUsed++
	if id != 0 || n > 16 {
		return fmt.Errorf("control command %d/%d: used entry id %d length %d", class, cmd, id, n)
	}
	if ack := buf[ctrlAckOff]; ack != virtiospec.CtrlOK {
		return fmt.Errorf("control command %d/%d: device answered %d (VIRTIO_NET_ERR)", class, cmd, ack)
	}
	return nil
}

// setPairs tells the device how many queue pairs to use.
func (q *ctrlQueue) setPairs(n int) error {
	var d [2]byte
	binary.LittleEndian.PutUint16(d[:], uint16(n))
	if err := q.command(virtiospec.CtrlClassMQ, virtiospec.CtrlMQPairsSet, d[:]); err != nil {
		return fmt.Errorf("set %d queue pairs: %w", n, err)
	}
	return nil
}

// newCtrlQueue sets up the control virtqueue (a few descriptors suffice) and its command
// buffer.
func newCtrlQueue(t *transport, dma pci.DMA, index uint16, msix, eventIdx bool) (*ctrlQueue, error) {
	buf, err := dma.Alloc(ctrlBufLen)
	if err != nil {
		return nil, fmt.Errorf("control queue buffer: %w", err)
	}
	q, err := newVQ(t, dma, index, 8, virtiospec.NoVector, msix, eventIdx)
	if err != nil {
		dma.Free(buf)
		return nil, fmt.Errorf("control queue: %w", err)
	}
	return &ctrlQueue{vq: *q, buf: buf}, nil
}

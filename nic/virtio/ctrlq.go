package virtio

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
)

// ctrlQueue is the control virtqueue. Commands are rare (at open), so one command is in
// flight at a time and the driver polls for its completion. Its buffer is the header slot
// area: the command (class, command, data) at offset 0 and the device's ack at 8.
type ctrlQueue struct {
	vq
	lastUsed uint16
}

// ctrlTimeout bounds the wait for the device to answer a control command.
const ctrlTimeout = time.Second

// command sends class/cmd with data (at most 6 bytes) and waits for the device's ack.
func (q *ctrlQueue) command(class, cmd uint8, data []byte) error {
	r := q.ring
	buf := r.hdr(0) // 12 bytes of DMA memory
	if len(data) > 6 {
		return fmt.Errorf("control command %d/%d: %d bytes of data", class, cmd, len(data))
	}
	buf[0], buf[1] = class, cmd
	copy(buf[2:], data)
	buf[8] = 0xff
	base := r.hdrIOVA(0)
	r.setDesc(0, base, uint32(2+len(data)), virtiospec.DescNext, 1)
	r.setDesc(1, base+8, 1, virtiospec.DescWrite, 0)
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
	if ack := buf[8]; ack != virtiospec.CtrlOK {
		return fmt.Errorf("control command %d/%d: device answered %d", class, cmd, ack)
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

// newCtrlQueue sets up the control virtqueue (a few descriptors suffice).
func newCtrlQueue(t *transport, dma pci.DMA, index uint16, msix, eventIdx bool) (*ctrlQueue, error) {
	q, err := newVQ(t, dma, index, 8, virtiospec.NoVector, msix, eventIdx)
	if err != nil {
		return nil, fmt.Errorf("control queue: %w", err)
	}
	return &ctrlQueue{vq: *q}, nil
}

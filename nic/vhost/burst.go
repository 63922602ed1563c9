package vhost

import (
	"github.com/uiod/uiod/nic"
)

// RxBurst implements nic.Port: it takes up to len(bufs) frames the front end sent (its TX
// ring), copying each out of its memory into a buffer of the port's pool, and gives the
// descriptors back. It returns 0 while no front end is running, or while the control
// goroutine reconfigures the ring. A ring started but disabled (SET_VRING_ENABLE 0) is
// processed and its frames discarded, as the specification asks of a network device.
func (p *Port) RxBurst(q int, bufs []*nic.Buf) (n int) {
	if q < 0 || q >= len(p.pools) {
		return 0
	}
	r := p.begin(rxRing(q), false)
	if r == nil {
		return 0
	}
	defer p.disarm(r)
	pool := p.pools[q]
	avail, ok := p.available(r)
	oldUsed := r.usedIdx
	var bytes uint64
	for ok && n < len(bufs) && avail > 0 {
		b := pool.Get()
		if b == nil {
			break
		}
		r.cur = b
		head, err := r.head()
		if err != nil {
			p.fault(r, err)
			return n
		}
		flen, ok, err := p.readChain(r, head, b.Data())
		if err != nil {
			p.fault(r, err)
			return n
		}
		r.lastAvail++
		avail--
		r.putUsed(head, 0)
		r.cur = nil
		if !ok || !r.enabled {
			b.Free()
			if !ok {
				p.stats.rxErrors.Add(1)
			}
			continue
		}
		b.SetLen(flen)
		bufs[n] = b
		n++
		bytes += uint64(flen)
	}
	if r.ready && r.usedIdx != oldUsed && r.publish(oldUsed) {
		p.signal(r)
	}
	if n > 0 {
		p.stats.rxPackets.Add(uint64(n))
		p.stats.rxBytes.Add(bytes)
	}
	return n
}

// readChain copies the frame of the chain at head, past its virtio-net header, into dst.
// ok is false for a frame that does not fit dst or is no longer than the header (it is
// dropped); err is a broken rule (the front end is stopped).
func (p *Port) readChain(r *vring, head uint16, dst []byte) (flen int, ok bool, err error) {
	w := walker{r: r, next: head, more: true}
	skip := p.hdrLen
	fits := true
	for w.more {
		addr, ln, err := w.step(false)
		if err != nil {
			return 0, false, err
		}
		if skip > 0 {
			k := min(uint32(skip), ln)
			addr, ln, skip = addr+uint64(k), ln-k, skip-int(k)
		}
		if ln == 0 || !fits {
			continue
		}
		if flen+int(ln) > len(dst) {
			fits = false
			continue
		}
		k, err := r.copyOut(dst[flen:], addr, ln)
		if err != nil {
			return 0, false, err
		}
		flen += k
	}
	return flen, fits && skip == 0 && flen > 0, nil
}

// TxBurst implements nic.Port: it copies frames into the buffers the front end made
// available on its RX ring, header first, and frees them. It stops at the first frame the
// ring has no room for; a frame larger than the buffer offered is dropped (counted in
// TxErrors), the buffer left in place and the burst ends there, so that a chain too short
// for the frames is walked once per burst, not once per frame. While no front end is
// running, or its ring is disabled, it takes nothing.
//
// TX queue q sends on pair q's guest RX ring while the front end runs it, else on one of
// the pairs it runs (Port.remapTx): then several poll threads may share one ring, and a
// burst waits for another's to end.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) (n int) {
	if q < 0 || q >= len(p.txTo) {
		return 0
	}
	r := p.begin(txRing(int(p.txTo[q].Load())), p.txShared.Load())
	if r == nil {
		return 0
	}
	defer p.disarm(r)
	if !r.enabled {
		return 0
	}
	avail, ok := p.available(r)
	oldUsed := r.usedIdx
	var bytes uint64
	var dropped uint64
	for ok && n < len(bufs) && avail > 0 {
		head, err := r.head()
		if err != nil {
			p.fault(r, err)
			break
		}
		f := bufs[n]
		written, ok, err := p.writeChain(r, head, f.Bytes())
		if err != nil {
			p.fault(r, err)
			break
		}
		f.Free()
		n++
		if !ok {
			dropped++
			break
		}
		r.lastAvail++
		avail--
		r.putUsed(head, uint32(written))
		bytes += uint64(f.Len())
	}
	if r.ready && r.usedIdx != oldUsed && r.publish(oldUsed) {
		p.signal(r)
	}
	if sent := uint64(n) - dropped; sent > 0 {
		p.stats.txPackets.Add(sent)
		p.stats.txBytes.Add(bytes)
	}
	if dropped > 0 {
		p.stats.txErrors.Add(dropped)
	}
	return n
}

// writeChain writes the virtio-net header and frame into the chain at head and returns the
// bytes written; ok is false when the chain is too short for them.
func (p *Port) writeChain(r *vring, head uint16, frame []byte) (total int, ok bool, err error) {
	w := walker{r: r, next: head, more: true}
	hdr := p.hdr[:p.hdrLen]
	need := len(hdr) + len(frame)
	for w.more && total < need {
		addr, ln, err := w.step(true)
		if err != nil {
			return 0, false, err
		}
		for ln > 0 && total < need {
			src := frame[max(total-len(hdr), 0):]
			if total < len(hdr) {
				src = hdr[total:]
			}
			k, err := r.copyIn(addr, ln, src)
			if err != nil {
				return 0, false, err
			}
			total += k
			addr += uint64(k)
			ln -= uint32(k)
		}
	}
	return total, total == need, nil
}

// begin starts a burst on vring i: it returns the ring locked and armed against memory
// faults (disarm ends the burst), or nil when there is nothing to do (a ring the control
// goroutine holds, or no front end). With wait it takes the lock even when that means
// waiting (a ring shared by TX queues); the control goroutine never holds it across a
// system call that can block.
func (p *Port) begin(i int, wait bool) *vring {
	r := &p.rings[i]
	if wait {
		r.mu.Lock()
	} else if !r.mu.TryLock() {
		return nil
	}
	if !r.ready {
		r.mu.Unlock()
		return nil
	}
	arm(r)
	return r
}

// available is r's count of entries to take; ok is false when the front end broke a rule.
func (p *Port) available(r *vring) (n uint16, ok bool) {
	n, err := r.availCount()
	if err != nil {
		p.fault(r, err)
		return 0, false
	}
	return n, true
}

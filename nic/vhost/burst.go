package vhost

import (
	"encoding/binary"
	"fmt"

	"github.com/uiod/uiod/nic"
)

// RxBurst implements nic.Port: it takes up to len(bufs) frames the front end sent (its TX
// ring), copying each out of its memory into a buffer of the port's pool (sized for the
// MTU: a frame of any length up to nic.MaxFrame(MTU) is one chain, however many
// descriptors), and gives the descriptors back; a longer frame is dropped (RxErrors). It returns 0 while no front end is running, or while the control
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
	avail, _ := p.available(r) // 0 when the front end broke a rule
	oldUsed := r.usedIdx
	var bytes uint64
	// These change only with every ring's lock held (setFeatures, SET_VRING_ENABLE).
	hl, maxFrame, enabled := uint32(p.hdrLen), uint32(p.maxFrame), r.enabled
	for n < len(bufs) && avail > 0 {
		b := pool.Get()
		if b == nil {
			break
		}
		r.cur = b
		head, ok := r.head()
		if !ok {
			p.fault(r, r.badHead())
			return n
		}
		// The common case, readChain's for a chain of one descriptor holding the header
		// and a frame that fits, in the region of the ring's last buffer, on an enabled
		// ring; anything else (another region, a longer chain, a drop, a broken rule) is
		// readChain's.
		addr, ln, flags, _ := r.descAt(head)
		if flags == 0 && ln > hl && ln-hl <= maxFrame && addr+uint64(ln) >= addr && enabled {
			if src := r.last.get(addr+uint64(hl), ln-hl); src != nil {
				flen := copy(b.Data(), src)
				r.lastAvail++
				avail--
				r.putUsed(head, 0)
				r.cur = nil
				b.SetLen(flen)
				bufs[n] = b
				n++
				bytes += uint64(flen)
				continue
			}
		}
		flen, ok, err := p.readChain(r, head, b.Data()[:maxFrame])
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
	skip := uint32(p.hdrLen)
	fits := true
	for w.more {
		addr, ln, err := w.step(false)
		if err != nil {
			return 0, false, err
		}
		if skip > 0 {
			k := min(skip, ln)
			addr, ln, skip = addr+uint64(k), ln-k, skip-k
		}
		if ln == 0 || !fits {
			continue
		}
		if uint64(ln) > uint64(len(dst)-flen) {
			fits = false
			continue
		}
		if src := r.gpa(addr, ln); src != nil {
			flen += copy(dst[flen:], src) // the descriptor's one translation
			continue
		}
		k, err := r.copyOut(dst[flen:], addr, ln) // across regions, or outside them
		if err != nil {
			return 0, false, err
		}
		flen += k
	}
	return flen, fits && skip == 0 && flen > 0, nil
}

// TxBurst implements nic.Port: it copies frames into the buffers the front end made
// available on its RX ring, header first, and frees them. A frame longer than the port's
// MTU allows is dropped (counted in TxErrors). Without VIRTIO_NET_F_MRG_RXBUF a frame takes
// one chain: it stops at the first frame the ring has no room for, and a frame larger than
// the chain offered is dropped (TxErrors), the chain left in place and the burst ends
// there, so that a chain too short for the frames is walked once per burst, not once per
// frame. With it a frame is spread over as many chains as it needs, num_buffers in the
// first one's header saying how many; the burst stops at a frame the available chains
// cannot hold yet (it stays the caller's), and one that even a full ring could not hold is
// dropped. While no front end is running, or its ring is disabled, it takes nothing.
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
	avail, _ := p.available(r) // 0 when the front end broke a rule
	oldUsed := r.usedIdx
	var bytes uint64
	var dropped uint64
	// These change only with every ring's lock held (setFeatures).
	hl, maxFrame, mrg := p.hdrLen, p.maxFrame, p.mrg
	h0, h1 := binary.LittleEndian.Uint64(p.hdr[:8]), binary.LittleEndian.Uint32(p.hdr[8:])
	for n < len(bufs) && avail > 0 {
		f := bufs[n]
		if f.Len() > maxFrame {
			f.Free()
			n++
			dropped++
			continue
		}
		head, ok := r.head()
		if !ok {
			p.fault(r, r.badHead())
			break
		}
		// writeOne, inlined: a chain of one descriptor that holds the header and the
		// frame, in the region of the ring's last buffer. With mergeable buffers too: that
		// is one buffer, and p.hdr's num_buffers is 1.
		flen := f.Len()
		need := hl + flen
		addr, ln, flags, _ := r.descAt(head)
		if flags == descWrite && uint64(ln) >= uint64(need) && addr+uint64(ln) >= addr {
			if dst := r.last.get(addr, uint32(need)); dst != nil {
				if hl == 12 { // putHeader's stores
					h := dst[:12:12]
					binary.LittleEndian.PutUint64(h, h0)
					binary.LittleEndian.PutUint32(h[8:], h1)
				} else {
					h := dst[:10:10]
					binary.LittleEndian.PutUint64(h, h0)
					binary.LittleEndian.PutUint16(h[8:], uint16(h1))
				}
				copy(dst[hl:], f.Bytes())
				f.Free()
				n++
				r.lastAvail++
				avail--
				r.putUsed(head, uint32(need))
				bytes += uint64(flen)
				continue
			}
		}
		if mrg { // the rest with mergeable buffers: writeMerged, from this chain on
			took, full, err := p.writeMerged(r, f.Bytes(), avail)
			if err != nil {
				p.fault(r, err)
				break
			}
			if took == 0 && !full {
				break // no room yet: the frame stays the caller's
			}
			f.Free()
			n++
			if full {
				dropped++ // longer than the whole ring's buffers
				continue
			}
			avail -= took
			bytes += uint64(f.Len())
			continue
		}
		written, ok := p.writeOne(r, head, f.Bytes())
		if !ok {
			var err error
			if written, err = p.fill(r, head, 0, f.Bytes()); err != nil {
				p.fault(r, err)
				break
			}
		}
		f.Free()
		n++
		if written != p.hdrLen+f.Len() {
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

// writeMerged writes the header and frame over as many of the avail chains as they need
// (VIRTIO_NET_F_MRG_RXBUF), with a used entry for each, and sets num_buffers in the first
// chain's header. took is the number of chains used; it is 0 when they do not hold the
// frame, and then nothing was taken (the chains stay available) and full says whether even
// a ring of available chains would not (the frame is to be dropped).
func (p *Port) writeMerged(r *vring, frame []byte, avail uint16) (took uint16, full bool, err error) {
	need := p.hdrLen + len(frame)
	first := uint16(0)
	for pos := 0; pos < need; {
		if took == avail {
			r.lastAvail -= took // the entries written are not published: take them back
			r.usedIdx -= took
			return 0, uint32(avail) == r.num, nil
		}
		head, ok := r.head()
		if !ok {
			return 0, false, r.badHead()
		}
		if took == 0 {
			first = head
		}
		end := 0
		ok = false
		if pos == 0 {
			end, ok = p.writeOne(r, head, frame)
		}
		if !ok {
			if end, err = p.fill(r, head, pos, frame); err != nil {
				return 0, false, err
			}
		}
		if took == 0 && end < p.hdrLen {
			// The specification's rule with mergeable buffers: each holds a header.
			return 0, false, fmt.Errorf("receive buffer of %d bytes (descriptor chain %d), shorter than the %d-byte header", end, head, p.hdrLen)
		}
		r.lastAvail++
		r.putUsed(head, uint32(end-pos))
		took++
		pos = end
	}
	if took > 1 {
		if err := p.setNumBuffers(r, first, took); err != nil {
			return 0, false, err
		}
	}
	return took, false, nil
}

// writeOne is fill's common case from the stream's start: a chain of one descriptor that
// holds the header and the whole frame, in one region. ok false leaves the chain to fill
// (which writes the same bytes, or finds the broken rule).
func (p *Port) writeOne(r *vring, head uint16, frame []byte) (int, bool) {
	addr, ln, flags, _ := r.descAt(head)
	need := p.hdrLen + len(frame)
	if flags != descWrite || uint64(ln) < uint64(need) || addr+uint64(ln) < addr {
		return 0, false
	}
	dst := r.last.get(addr, uint32(need))
	if dst == nil {
		if dst = r.gpaMiss(addr, uint32(need)); dst == nil {
			return 0, false
		}
	}
	p.putHeader(dst)
	copy(dst[p.hdrLen:], frame)
	return need, true
}

// fill writes the virtio-net header and frame, taken as one stream from its byte pos on,
// into the chain at head until the chain or the stream ends, and returns the stream's
// position after it.
func (p *Port) fill(r *vring, head uint16, pos int, frame []byte) (int, error) {
	w := walker{r: r, next: head, more: true}
	hl := p.hdrLen
	need := hl + len(frame)
	for w.more && pos < need {
		addr, ln, err := w.step(true)
		if err != nil {
			return 0, err
		}
		k := uint32(min(uint64(ln), uint64(need-pos)))
		dst := r.gpa(addr, k) // the descriptor's one translation, of the part written
		if dst == nil {
			if pos, err = p.fillChunks(r, addr, k, pos, frame); err != nil {
				return 0, err
			}
			continue
		}
		if pos == 0 && len(dst) >= hl {
			p.putHeader(dst)
			pos, dst = hl, dst[hl:]
		}
		for len(dst) > 0 {
			var c int
			if pos < hl {
				c = copy(dst, p.hdr[pos:hl])
			} else {
				c = copy(dst, frame[pos-hl:])
			}
			pos, dst = pos+c, dst[c:]
		}
	}
	return pos, nil
}

// putHeader writes the virtio-net header (10 or 12 bytes, p.hdr) at the start of dst
// (len(dst) >= p.hdrLen) with two stores.
func (p *Port) putHeader(dst []byte) {
	binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(p.hdr[:8]))
	if p.hdrLen == 12 {
		binary.LittleEndian.PutUint32(dst[8:], binary.LittleEndian.Uint32(p.hdr[8:]))
	} else {
		binary.LittleEndian.PutUint16(dst[8:], binary.LittleEndian.Uint16(p.hdr[8:]))
	}
}

// fillChunks is fill's copy of the stream from pos into the n bytes at guest address a
// when they are not in one region: chunk by chunk, each of which must be in one.
func (p *Port) fillChunks(r *vring, a uint64, n uint32, pos int, frame []byte) (int, error) {
	hl := p.hdrLen
	for n > 0 {
		src := frame[max(pos-hl, 0):]
		if pos < hl {
			src = p.hdr[pos:hl]
		}
		k, err := r.copyIn(a, n, src)
		if err != nil {
			return 0, err
		}
		pos, a, n = pos+k, a+uint64(k), n-uint32(k)
	}
	return pos, nil
}

// setNumBuffers writes num_buffers, the 12-byte header's last field, in the chain at head
// that fill wrote the header into.
func (p *Port) setNumBuffers(r *vring, head uint16, n uint16) error {
	v := [2]byte{byte(n), byte(n >> 8)}
	w := walker{r: r, next: head, more: true}
	skip, done := 10, 0
	for w.more && done < len(v) {
		addr, ln, err := w.step(true)
		if err != nil {
			return err
		}
		k := min(uint32(skip), ln)
		addr, ln, skip = addr+uint64(k), ln-k, skip-int(k)
		if ln == 0 {
			continue
		}
		c, err := r.copyIn(addr, ln, v[done:])
		if err != nil {
			return err
		}
		done += c
	}
	return nil
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

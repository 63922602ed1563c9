package vhost

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/nic"
)

// FuzzBurstDescriptor puts one arbitrary descriptor (address, length, flags, next) on a
// running ring and takes it with RxBurst (guest TX ring) or fills it with TxBurst (guest
// RX ring, a 60-byte frame), against a model of the rules: the result — a frame, a drop,
// or a fault that stops the front end — and the bytes moved must be the model's. The
// bursts' one-descriptor fast paths and the chain walker must agree on every input.
func FuzzBurstDescriptor(f *testing.F) {
	for _, s := range []struct {
		tx    bool
		addr  uint64
		n     uint32
		flags uint16
	}{
		{false, feGPA + feBufOff, 12 + 60, 0},
		{true, feGPA + feBufOff, 2048, descWrite},
		{false, feGPA + feMemSize - 40, 72, 0},
		{true, feGPA - 8, 100, descWrite},
		{false, feGPA + feBufOff, 12 + 1600, 0},
		{false, ^uint64(0) - 10, 100, 0},
		{true, feGPA + feBufOff, 30, descWrite},
		{false, feGPA + feBufOff, 12, descNext},
	} {
		f.Add(s.tx, s.addr, s.n, s.flags, uint16(1))
	}
	f.Fuzz(func(t *testing.T, tx bool, addr uint64, n uint32, flags, next uint16) {
		p, sock := openServer(t)
		fe := dial(t, sock)
		fe.start(stdFeatures)
		eventually(t, "link up", func() bool { return p.Link().Up })
		for i := feBufOff; i < feMemSize; i++ { // no two neighbouring bytes alike
			fe.mem[i] = byte(i*7 + 3)
		}
		inMem := func(a uint64, k uint64) bool { // [a, a+k) in the one region
			return a >= feGPA && a-feGPA <= feMemSize && k <= feMemSize-(a-feGPA)
		}
		const hl = 12
		ring := rxRing(0)
		if tx {
			ring = txRing(0)
		}
		// A first good frame each way fills the ring's region cache, so that the fuzzed
		// descriptor meets the fast path, not only the walker.
		if tx {
			fe.postRx(1)
			sendOne(t, p, frame(1, 60))
		} else {
			fe.transmit(1, frame(1, 60))
			rxAll(t, p, 1)
		}
		fe.putDesc(ring, 0, addr, n, flags, next)
		fe.pushAvail(ring, 0)
		var got []byte
		var took int
		if tx {
			b := p.pools[0].Get()
			b.SetLen(copy(b.Data(), frame(9, 60)))
			took = p.TxBurst(0, []*nic.Buf{b})
		} else {
			bufs := make([]*nic.Buf, 4)
			took = p.RxBurst(0, bufs)
			if took > 0 {
				got = append([]byte(nil), bufs[0].Bytes()...)
				bufs[0].Free()
			}
		}
		// A broken rule stops the ring at once (Port.fault); the fault count follows later.
		faulted := false
		p.withRing(ring, func(r *vring) error {
			faulted = !r.ready
			return nil
		})
		overflow := addr+uint64(n) < addr
		switch {
		case !tx:
			// The model of readChain for one descriptor, or a chain whose next one the
			// model does not follow (then only the rules on this one are checked).
			bad := flags&(descIndirect|descWrite) != 0 || (flags&descNext != 0 && uint32(next) >= 256) || overflow
			if flags&descNext != 0 && !bad {
				return // a chain: the walker's, covered by the hostile tests
			}
			body := uint64(n) - min(uint64(n), hl)
			switch {
			case bad:
				if !faulted {
					t.Fatalf("descriptor %#x+%d flags %#x next %d taken without a fault", addr, n, flags, next)
				}
			case body == 0 || body > uint64(p.maxFrame):
				if faulted || took != 0 {
					t.Fatalf("a frame of %d bytes: took %d, faulted %v; want it dropped", body, took, faulted)
				}
			case !inMem(addr+hl, body):
				if !faulted {
					t.Fatalf("a frame at %#x+%d outside the region taken without a fault", addr+hl, body)
				}
			default:
				want := fe.mem[addr+hl-feGPA : addr+hl-feGPA+body]
				if faulted || took != 1 || !bytes.Equal(got, want) {
					t.Fatalf("took %d (faulted %v), %d bytes; want the %d bytes at %#x", took, faulted, len(got), body, addr+hl)
				}
			}
		default:
			need := uint64(hl + 60)
			bad := flags&(descIndirect|descWrite) != descWrite || (flags&descNext != 0 && uint32(next) >= 256) || overflow
			if flags&descNext != 0 && !bad && uint64(n) < need {
				return // the frame continues into the next descriptor: the walker's
			}
			k := min(uint64(n), need)
			switch {
			case bad:
				if !faulted {
					t.Fatalf("receive buffer %#x+%d flags %#x next %d filled without a fault", addr, n, flags, next)
				}
			case k > 0 && !inMem(addr, k): // no byte is touched in an empty buffer
				if !faulted {
					t.Fatalf("receive buffer at %#x+%d outside the region filled without a fault", addr, k)
				}
			case uint64(n) < need:
				if faulted || took != 1 || p.stats.txErrors.Load() != 1 {
					t.Fatalf("short buffer (%d bytes): took %d, faulted %v, %d errors; want the frame dropped", n, took, faulted, p.stats.txErrors.Load())
				}
			default:
				_, _, u := fe.ringOff(ring)
				used := binary.LittleEndian.Uint32(fe.mem[u+4+8+4:]) // entry 1
				m := fe.mem[addr-feGPA:]
				if faulted || took != 1 || used != uint32(need) || !bytes.Equal(m[hl:need], frame(9, 60)) || m[10] != 1 {
					t.Fatalf("took %d (faulted %v), used length %d; want the header and frame at %#x", took, faulted, used, addr)
				}
			}
		}
	})
}

package vhost

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/nic"
)

// errRefused answers a request the back end does not implement: a failure reply when the
// front end asked for one, and the connection stays.
var errRefused = errors.New("request not supported")

// session is one front end's negotiation state (control goroutine only).
type session struct {
	p        *Port
	features uint64
	protocol uint64
	mtu      int // the front end's NET_SET_MTU, 0 before it
	buf      [hdrSize + 8]byte
}

// offer is what GET_FEATURES answers: VIRTIO_NET_F_MQ besides on a port of more than one
// pair (QEMU and DPDK's virtio-user want it before they use a second pair).
func (p *Port) offer() uint64 {
	if p.cfg.Queues > 1 {
		return offeredFeatures | 1<<featMQ
	}
	return offeredFeatures
}

func (s *session) replyAck() bool { return s.protocol&(1<<protoReplyAck) != 0 }

// ack is a REPLY_ACK reply to req: 0 success, anything else failure.
func (s *session) ack(req uint32, v uint64) []byte { return s.u64(req, v) }

func (s *session) u64(req uint32, v uint64) []byte {
	var p [8]byte
	binary.LittleEndian.PutUint64(p[:], v)
	return putReply(s.buf[:], req, p[:])
}

// handle applies one request and returns its reply, if it has one. A descriptor it keeps
// is set to -1 in m.fds.
func (s *session) handle(m *message) ([]byte, error) {
	p, req := s.p, m.hdr.req
	if n := len(m.fds); n > 0 && req != reqSetMemTable && req != reqSetVringKick && req != reqSetVringCall &&
		req != reqSetVringErr && req != reqSetLogFd && req != reqSetLogBase {
		return nil, fmt.Errorf("%w: request %d came with %d descriptors", errProto, req, n)
	}
	switch req {
	case reqGetFeatures:
		return s.u64(req, p.offer()), nil
	case reqSetFeatures:
		v, err := offered(req, m.payload, p.offer())
		if err != nil {
			return nil, err
		}
		if v != s.features && p.anyStarted() {
			// The header length and the notification scheme would change under the
			// running rings (DPDK refuses this too).
			return nil, fmt.Errorf("%w: SET_FEATURES 0x%x while the rings run with 0x%x", errProto, v, s.features)
		}
		s.features = v
		p.setFeatures(v)
		return nil, nil
	case reqGetProtocolFeatures:
		return s.u64(req, offeredProtocol), nil
	case reqSetProtocolFeatures:
		v, err := offered(req, m.payload, offeredProtocol)
		if err != nil {
			return nil, err
		}
		s.protocol = v
		return nil, nil
	case reqGetQueueNum:
		return s.u64(req, uint64(p.cfg.Queues)), nil
	case reqNetSetMTU:
		return nil, s.setMTU(m.payload)
	case reqSetOwner:
		return nil, nil
	case reqResetOwner:
		// Deprecated; what it means is taken whole: the session as a new connection's.
		p.resetState()
		s.features, s.protocol, s.mtu = 0, 0, 0
		return nil, nil
	case reqSetMemTable:
		return nil, s.setMemTable(m)
	case reqSetVringNum, reqSetVringBase, reqSetVringEnable:
		st, err := parseState(req, m.payload)
		if err != nil {
			return nil, err
		}
		return nil, s.setState(req, st)
	case reqSetVringAddr:
		a, err := parseAddr(m.payload)
		if err != nil {
			return nil, err
		}
		return nil, p.withRing(int(a.index), func(r *vring) error {
			if err := r.setAddr(a); err != nil {
				return err
			}
			return r.relayout(p.mem)
		})
	case reqGetVringBase:
		st, err := parseState(req, m.payload)
		if err != nil {
			return nil, err
		}
		var base uint16
		if err := p.withRing(int(st.index), func(r *vring) error {
			base = r.base
			if r.ready {
				base = r.lastAvail
			}
			r.stop()
			r.base, r.kickSet = base, false
			return nil
		}); err != nil {
			return nil, err
		}
		var b [stateSize]byte
		binary.LittleEndian.PutUint32(b[:], st.index)
		binary.LittleEndian.PutUint32(b[4:], uint32(base))
		return putReply(make([]byte, hdrSize+stateSize), req, b[:]), nil
	case reqSetVringKick, reqSetVringCall, reqSetVringErr:
		return nil, s.setVringFd(m)
	}
	if hasNativeReply(req) {
		// The front end waits for this reply whatever NEED_REPLY says: an empty payload,
		// which every front end's size check refuses, tells it the request failed.
		return putReply(s.buf[:], req, nil), fmt.Errorf("request %d: %w", req, errRefused)
	}
	return nil, fmt.Errorf("request %d: %w", req, errRefused)
}

// Requests this back end refuses whose normal form has a reply payload (the vhost-user
// specification's numbering): GET_CONFIG, CREATE_CRYPTO_SESSION, POSTCOPY_ADVISE,
// POSTCOPY_END, GET_INFLIGHT_FD, GET_MAX_MEM_SLOTS, GET_STATUS, GET_SHARED_OBJECT,
// SET_DEVICE_STATE_FD and CHECK_DEVICE_STATE.
func hasNativeReply(req uint32) bool {
	switch req {
	case 24, 26, 28, 30, 31, 36, 40, 41, 42, 43:
		return true
	}
	return false
}

// setMTU answers VHOST_USER_NET_SET_MTU: the MTU the front end's driver runs (QEMU sends
// its host_mtu, DPDK its port's MTU). One up to the port's is taken, and frames stay
// bounded by the port's; one above it is refused (a failure reply: the front end learns
// the back end cannot carry it), the connection kept.
func (s *session) setMTU(payload []byte) error {
	if s.protocol&(1<<protoNetMTU) == 0 {
		return fmt.Errorf("%w: NET_SET_MTU without the NET_MTU protocol feature", errProto)
	}
	v, err := parseU64(reqNetSetMTU, payload)
	if err != nil {
		return err
	}
	if v < nic.MinMTU || v > uint64(s.p.cfg.MTU) {
		s.p.log.Warn("vhost-user front end's MTU refused", zap.String("socket", s.p.cfg.Socket),
			zap.Uint64("mtu", v), zap.Int("port_mtu", s.p.cfg.MTU))
		return fmt.Errorf("NET_SET_MTU %d: the port carries %d to %d: %w", v, nic.MinMTU, s.p.cfg.MTU, errRefused)
	}
	s.mtu = int(v)
	return nil
}

func (s *session) setState(req uint32, st vringState) error {
	p := s.p
	i := int(st.index)
	return p.withRing(i, func(r *vring) error {
		switch req {
		case reqSetVringNum:
			if r.ready {
				return fmt.Errorf("%w: SET_VRING_NUM on running vring %d", errProto, i)
			}
			return r.setNum(st.num)
		case reqSetVringBase:
			if r.ready {
				return fmt.Errorf("%w: SET_VRING_BASE on running vring %d", errProto, i)
			}
			if st.num > 0xffff {
				return fmt.Errorf("%w: SET_VRING_BASE %d on vring %d (split rings take 16 bits)", errProto, st.num, i)
			}
			r.base = uint16(st.num)
			return nil
		}
		if st.num > 1 {
			return fmt.Errorf("%w: SET_VRING_ENABLE %d on vring %d", errProto, st.num, i)
		}
		r.enabled = st.num == 1
		return p.startStop(i, r)
	})
}

// setVringFd applies SET_VRING_KICK, CALL or ERR.
func (s *session) setVringFd(m *message) error {
	p, req := s.p, m.hdr.req
	i, hasFd, err := parseVringFd(req, m.payload, len(m.fds))
	if err != nil {
		return err
	}
	if i >= len(p.rings) {
		return fmt.Errorf("%w: request %d: vring %d, the port has %d (%d queue pairs)", errProto, req, i, len(p.rings), len(p.rings)/numVrings)
	}
	fd := -1
	if hasFd {
		if !isEventfd(m.fds[0]) {
			return fmt.Errorf("%w: request %d: descriptor is not an eventfd", errProto, req)
		}
		fd = m.fds[0]
	}
	switch req {
	case reqSetVringErr:
		return nil // never signalled: the descriptor is closed
	case reqSetVringCall:
		var c *caller
		if hasFd {
			m.fds[0] = -1
			c = newCaller(fd)
		}
		var old *caller
		p.withRing(i, func(r *vring) error {
			old, r.call = r.call, c
			if c != nil && r.ready {
				// QEMU sends the kick, starting the ring, before the real call fd (a
				// masked notifier came first): an interrupt in between went nowhere, and
				// with EVENT_IDX the front end never asks again. One extra call, as
				// libvhost-user makes, is harmless otherwise.
				c.signal()
			}
			return nil
		})
		old.close()
		return nil
	}
	if i%numVrings == ringGuestTX {
		if hasFd {
			m.fds[0] = -1
		}
		if err := p.kicks[i/numVrings].set(fd); err != nil {
			return err
		}
	} // the guest RX rings' kicks are not needed: their descriptors are closed
	return p.withRing(i, func(r *vring) error {
		r.kickSet, r.noKick = true, !hasFd
		if s.features&(1<<featProtocolFeature) == 0 {
			r.enabled = true // rings start enabled without protocol features
		}
		return p.startStop(i, r)
	})
}

// setMemTable applies SET_MEM_TABLE. The new table is committed only when every started
// ring fits it: until then every ring is held and stay on the old one, which on a refusal
// stays mapped and in use (the front end is disconnected, and the reset that follows stops
// the rings before it unmaps it). A table identical to the current one (QEMU resends it
// at every start) keeps the current mapping.
func (s *session) setMemTable(m *message) error {
	p := s.p
	rs, err := parseMemTable(m.payload, len(m.fds))
	if err != nil {
		return err
	}
	if p.mem.same(rs, m.fds) {
		return nil
	}
	t, err := mapTable(rs, m.fds, p.cfg.MemoryFS)
	if err != nil {
		return err
	}
	p.lockRings()
	var lay [maxVrings]ringLayout
	for i := range p.rings {
		r := &p.rings[i]
		if !r.ready {
			continue
		}
		if lay[i], err = r.plan(t); err != nil {
			p.unlockRings()
			t.unmap()
			return fmt.Errorf("SET_MEM_TABLE refused, vring %d does not fit it: %w", i, err)
		}
	}
	for i := range p.rings {
		if r := &p.rings[i]; r.ready {
			r.commit(t, lay[i])
		}
	}
	old := p.mem
	p.mem = t
	p.unlockRings()
	old.unmap()
	return nil
}

// offered decodes a SET_FEATURES or SET_PROTOCOL_FEATURES mask, which must be a subset of
// what was offered.
func offered(req uint32, p []byte, offer uint64) (uint64, error) {
	v, err := parseU64(req, p)
	if err != nil {
		return 0, err
	}
	if v&^offer != 0 {
		return 0, fmt.Errorf("%w: request %d: features 0x%x: 0x%x not offered", errProto, req, v, v&^offer)
	}
	return v, nil
}

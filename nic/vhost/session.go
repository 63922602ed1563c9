package vhost

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errRefused answers a request the back end does not implement: a failure reply when the
// front end asked for one, and the connection stays.
var errRefused = errors.New("request not supported")

// session is one front end's negotiation state (control goroutine only).
type session struct {
	p        *Port
	features uint64
	protocol uint64
	buf      [hdrSize + 8]byte
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
		return s.u64(req, offeredFeatures), nil
	case reqSetFeatures:
		v, err := offered(req, m.payload, offeredFeatures)
		if err != nil {
			return nil, err
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
		return s.u64(req, numVrings/2), nil
	case reqSetOwner:
		return nil, nil
	case reqResetOwner:
		p.stopRings()
		s.features = 0
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
			return relayout(r, p.mem)
		})
	case reqGetVringBase:
		st, err := parseState(req, m.payload)
		if err != nil {
			return nil, err
		}
		var base uint16
		p.withRing(int(st.index), func(r *vring) error {
			base = r.base
			if r.ready {
				base = r.lastAvail
			}
			r.stop()
			r.base, r.kickSet = base, false
			return nil
		})
		var b [stateSize]byte
		binary.LittleEndian.PutUint32(b[:], st.index)
		binary.LittleEndian.PutUint32(b[4:], uint32(base))
		return putReply(make([]byte, hdrSize+stateSize), req, b[:]), nil
	case reqSetVringKick, reqSetVringCall, reqSetVringErr:
		return nil, s.setVringFd(m)
	}
	return nil, fmt.Errorf("request %d: %w", req, errRefused)
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
		if hasFd {
			m.fds[0] = -1
		}
		return p.withRing(i, func(r *vring) error {
			closeFd(r.call)
			r.call = fd
			return nil
		})
	}
	if i == ringGuestTX {
		if hasFd {
			m.fds[0] = -1
		}
		if err := p.kick.set(fd); err != nil {
			return err
		}
	} // the guest RX ring's kicks are not needed: its descriptor is closed
	return p.withRing(i, func(r *vring) error {
		r.kickSet = true
		if s.features&(1<<featProtocolFeature) == 0 {
			r.enabled = true // rings start enabled without protocol features
		}
		return p.startStop(i, r)
	})
}

func (s *session) setMemTable(m *message) error {
	p := s.p
	rs, err := parseMemTable(m.payload, len(m.fds))
	if err != nil {
		return err
	}
	t, err := mapTable(rs, m.fds)
	if err != nil {
		return err
	}
	old := p.mem
	p.mem = t
	for i := range p.rings {
		if err := p.withRing(i, func(r *vring) error { return relayout(r, t) }); err != nil {
			old.unmap()
			return err
		}
	}
	old.unmap()
	return nil
}

// relayout lays a running ring over mem again (its addresses or the memory changed); a ring
// that no longer fits is stopped.
func relayout(r *vring, mem *memTable) error {
	if !r.ready {
		return nil
	}
	if err := r.layout(mem); err != nil {
		r.stop()
		return err
	}
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

package vhost

import (
	"errors"
	"path/filepath"
	"testing"
)

// FuzzMessage feeds arbitrary requests (header and payload, no descriptors) to the parser
// and to a session of a real port of two queue pairs: nothing may panic, and every refusal is a protocol
// violation or a refused request.
func FuzzMessage(f *testing.F) {
	seeds := [][]byte{
		msg(reqGetFeatures, flagVersion, nil),
		msg(reqSetFeatures, flagVersion, u64(offeredFeatures)),
		msg(reqSetProtocolFeatures, flagVersion|flagNeedReply, u64(offeredProtocol)),
		msg(reqSetMemTable, flagVersion, regionsMsg(region{gpa: 0x1000, size: 0x1000, uva: 0x1000})),
		msg(reqSetVringNum, flagVersion, state(1, 256)),
		msg(reqSetVringAddr, flagVersion, make([]byte, addrSize)),
		msg(reqSetVringBase, flagVersion, state(0, 5)),
		msg(reqGetVringBase, flagVersion, state(1, 0)),
		msg(reqSetVringKick, flagVersion, u64(1|vringNoFd)),
		msg(reqSetVringEnable, flagVersion, state(1, 1)),
		msg(reqGetQueueNum, flagVersion, nil),
		msg(reqSetVringNum, flagVersion, state(3, 64)),
		msg(reqSetVringEnable, flagVersion, state(2, 1)),
		msg(reqSetVringNum, flagVersion, state(7, 64)), // beyond the port's pairs
	}
	for _, s := range seeds {
		f.Add(s)
	}
	p, err := Open(Config{Socket: filepath.Join(f.TempDir(), "fuzz.sock"), Queues: 2, PoolSize: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	s := &session{p: p}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < hdrSize {
			return
		}
		h, err := parseHeader(b)
		if err != nil {
			if !errors.Is(err, errProto) {
				t.Fatalf("header error %v is not a protocol violation", err)
			}
			return
		}
		payload := b[hdrSize:]
		if int(h.size) < len(payload) {
			payload = payload[:h.size]
		}
		if _, err := s.handle(&message{hdr: h, payload: payload}); err != nil && !errors.Is(err, errProto) && !errors.Is(err, errRefused) {
			t.Fatalf("request %d: error %v is neither a violation nor a refusal", h.req, err)
		}
		p.remapTx()
		for q := range p.txTo {
			if to := p.txTo[q].Load(); int(to) >= p.cfg.Queues {
				t.Fatalf("TX queue %d mapped to pair %d of %d", q, to, p.cfg.Queues)
			}
		}
		if _, err := parseMemTable(payload, int(h.flags>>8&0xf)); err != nil && !errors.Is(err, errProto) {
			t.Fatalf("memory table error %v is not a protocol violation", err)
		}
	})
}

package testutil

import (
	"encoding/binary"
	"sync"
)

// SeqFrame returns a 64-byte broadcast frame (EtherType 0x88b5, local experimental)
// carrying seq in its last four bytes, for tests that count frames through a dataplane.
func SeqFrame(seq uint32) []byte {
	f := make([]byte, 64)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 9, 0x88, 0xb5})
	binary.BigEndian.PutUint32(f[60:], seq)
	return f
}

// SeqSink counts the frames SeqFrame made that arrive on a wire end, by sequence number.
// Its Handler is a wire handler; the zero value is ready to use.
type SeqSink struct {
	mu   sync.Mutex
	seen map[uint32]int
}

// Handler records one frame; frames shorter than 64 bytes are ignored.
func (s *SeqSink) Handler(f []byte, _ int64) {
	if len(f) < 64 {
		return
	}
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[uint32]int{}
	}
	s.seen[binary.BigEndian.Uint32(f[60:])]++
	s.mu.Unlock()
}

// Count is how many distinct sequence numbers arrived.
func (s *SeqSink) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

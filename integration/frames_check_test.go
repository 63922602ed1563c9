package integration

import (
	"bytes"
	"testing"
	"time"
)

// TestFrameLogCount checks that count counts only the frames it is asked for, stops once
// it has them, and forgets what it looked at.
func TestFrameLogCount(t *testing.T) {
	src := []byte{0x02, 0, 0, 0, 0, 0x99}
	l := &frameLog{}
	for i := 0; i < 5; i++ {
		l.add(udpFrame(make([]byte, 6), src, 1000, i), 0)
		l.add(udpFrame(make([]byte, 6), []byte{0x02, 0, 0, 0, 0, 1}, 1000, i), 0)
	}
	mine := func(f []byte) bool { return bytes.Equal(f[6:12], src) }
	if n := l.count(5, 10*time.Second, mine); n != 5 {
		t.Errorf("counted %d of the 5 marked frames", n)
	}
	if n := l.count(1, 200*time.Millisecond, mine); n != 0 {
		t.Errorf("counted %d frames again", n)
	}
}

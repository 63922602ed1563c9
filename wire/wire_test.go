package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestPair(t *testing.T) {
	a, b := Pair()
	var got []byte
	var ts int64
	b.SetHandler(func(f []byte, t int64) { got = append([]byte(nil), f...); ts = t })
	before := Now()
	if err := a.Send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{1, 2, 3}) || ts < before {
		t.Fatalf("got %v at %d (sent after %d)", got, ts, before)
	}
	b.Close()
	if err := a.Send([]byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send to closed peer: %v", err)
	}
}

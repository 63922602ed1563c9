package wire

import (
	"bytes"
	"testing"
)

// TestRecorder: Take returns copies of the frames in arrival order and forgets them; Len
// counts what Take would return.
func TestRecorder(t *testing.T) {
	a, b := Pair()
	defer a.Close()
	var r Recorder
	b.SetHandler(r.Handle)
	f := []byte{1, 2, 3}
	if err := a.Send(f); err != nil {
		t.Fatal(err)
	}
	f[0] = 9 // the recorded frame is a copy
	if err := a.Send([]byte{4}); err != nil {
		t.Fatal(err)
	}
	if n := r.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	got := r.Take()
	if len(got) != 2 || !bytes.Equal(got[0], []byte{1, 2, 3}) || !bytes.Equal(got[1], []byte{4}) {
		t.Fatalf("Take = %v, want [[1 2 3] [4]]", got)
	}
	if got := r.Take(); got != nil {
		t.Fatalf("second Take = %v, want nil", got)
	}
	if n := r.Len(); n != 0 {
		t.Fatalf("Len after Take = %d, want 0", n)
	}
}

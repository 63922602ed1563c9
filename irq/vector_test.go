package irq

import "testing"

func TestEventfdVector(t *testing.T) {
	v, err := NewEventfd(MSIX, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if n, err := v.Drain(); err != nil || n != 0 {
		t.Fatalf("Drain on fresh vector = %d, %v; want 0, nil", n, err)
	}
	for i := 0; i < 3; i++ {
		if err := v.Signal(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := v.Drain(); err != nil || n != 3 {
		t.Fatalf("Drain = %d, %v; want 3, nil", n, err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.Signal(); err == nil {
		t.Fatal("Signal after Close succeeded")
	}
}

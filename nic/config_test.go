package nic

import (
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	want := Config{RxQueues: 1, TxQueues: 1, RxRing: 512, TxRing: 512, BufSize: 2048, PoolSize: 1536, LinkTimeout: 2 * time.Second}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(16); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"too many rx queues", Config{RxQueues: 17}},
		{"too many tx queues", Config{TxQueues: 17}},
		{"ring not a power of two", Config{RxRing: 100}},
		{"ring too small", Config{TxRing: 4}},
		{"ring too large", Config{RxRing: 65536}},
		{"buffer too small", Config{BufSize: 512}},
		{"buffer too large", Config{BufSize: 32768}},
		// The NIC would fill only 1 KiB of a 1500-byte buffer and split (drop) a 1514-byte frame.
		{"buffer not whole KiB", Config{BufSize: 1500}},
		{"pool smaller than ring", Config{RxRing: 512, PoolSize: 100}},
		{"negative itr", Config{ITR: -1}},
		{"negative link timeout", Config{LinkTimeout: -1}},
		{"msi", Config{Interrupts: irq.MSI}},
	}
	for _, tt := range tests {
		if err := tt.cfg.WithDefaults().Validate(16); err == nil {
			t.Errorf("%s: %+v accepted", tt.name, tt.cfg)
		}
	}
	if err := (Config{Interrupts: irq.MSI, NoIRQ: true}).WithDefaults().Validate(16); err != nil {
		t.Errorf("interrupt mode checked without interrupts: %v", err)
	}
}

package nic

import (
	"testing"
	"time"

	"github.com/uiod/uiod/irq"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	want := Config{RxQueues: 1, TxQueues: 1, RxRing: 512, TxRing: 512, MTU: 1500, BufSize: 2048, PoolSize: 1536, LinkTimeout: 2 * time.Second, TxTimeout: time.Second}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
	if err := c.Validate(Limits{Queues: 16, Ring: 8192}); err != nil {
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
		{"ring over the driver's cap", Config{TxRing: 4096 * 2}},
		{"buffer too small", Config{BufSize: 512}},
		{"buffer too large", Config{BufSize: 32768}},
		// The NIC would fill only 1 KiB of a 1500-byte buffer and split (drop) a 1514-byte frame.
		{"buffer not whole KiB", Config{BufSize: 1500}},
		{"pool smaller than ring", Config{RxRing: 512, PoolSize: 100}},
		{"mtu below IPv4's minimum", Config{MTU: 67}},
		{"mtu over the driver's", Config{MTU: 9001}},
		{"buffer smaller than a frame of the mtu", Config{MTU: 9000, BufSize: 8192}},
		{"a 1 KiB buffer at the default mtu", Config{BufSize: 1024}},
		{"negative itr", Config{ITR: -1}},
		{"negative link timeout", Config{LinkTimeout: -1}},
		{"negative tx timeout", Config{TxTimeout: -1}},
		{"msi", Config{Interrupts: IRQModeOf(irq.MSI)}},
		{"unknown mode", Config{Interrupts: IRQNone + 1}},
	}
	for _, tt := range tests {
		if err := tt.cfg.WithDefaults().Validate(Limits{Queues: 16, Ring: 4096, MaxMTU: 9000}); err == nil {
			t.Errorf("%s: %+v accepted", tt.name, tt.cfg)
		}
	}
	for _, ok := range []Config{{MTU: 9000}, {MTU: 68}, {MTU: 9000, BufSize: 16384}} {
		if err := ok.WithDefaults().Validate(Limits{Queues: 16, Ring: 4096, MaxMTU: 9000}); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	if err := (Config{MTU: 1501}).WithDefaults().Validate(Limits{Queues: 16, Ring: 4096}); err == nil {
		t.Error("mtu 1501 accepted by a driver without a MaxMTU (standard frames only)")
	}
	if err := (Config{Interrupts: IRQModeOf(irq.MSI), NoIRQ: true}).WithDefaults().Validate(Limits{Queues: 16, Ring: 8192}); err != nil {
		t.Errorf("interrupt mode checked without interrupts: %v", err)
	}
}

// TestNoIRQ checks that poll-only is one interrupt mode, IRQNone, and that the older
// NoIRQ field still asks for it.
func TestNoIRQ(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"IRQNone", Config{Interrupts: IRQNone}},
		{"NoIRQ", Config{NoIRQ: true}},
		{"NoIRQ over msix", Config{NoIRQ: true, Interrupts: IRQMSIX}},
	}
	for _, tt := range tests {
		c := tt.cfg.WithDefaults()
		if c.Interrupts != IRQNone || c.NoIRQ {
			t.Errorf("%s: WithDefaults gives mode %v, NoIRQ %v; want none, false", tt.name, c.Interrupts, c.NoIRQ)
		}
		if err := c.Validate(Limits{Queues: 16, Ring: 4096}); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	if s := IRQNone.String(); s != "none" {
		t.Errorf("IRQNone is %q, want none", s)
	}
}

func TestIRQMode(t *testing.T) {
	if (Config{}).WithDefaults().Interrupts != IRQDefault {
		t.Fatal("zero config is not the default interrupt mode")
	}
	tests := []struct {
		kind irq.Kind
		want IRQMode
	}{{irq.MSIX, IRQMSIX}, {irq.INTx, IRQINTx}}
	for _, tt := range tests {
		if got := IRQModeOf(tt.kind); got != tt.want {
			t.Errorf("IRQModeOf(%v) = %v, want %v", tt.kind, got, tt.want)
		}
	}
	c := Config{Interrupts: IRQModeOf(irq.MSI)}.WithDefaults()
	if err := c.Validate(Limits{Queues: 1, Ring: 8192}); err == nil {
		t.Error("IRQModeOf(MSI) accepted")
	}
	c = Config{RxRing: 8192}.WithDefaults()
	if err := c.Validate(Limits{Queues: 1, Ring: 8192}); err != nil {
		t.Errorf("ring of 8192 refused: %v", err)
	}
}

func TestFrameSizes(t *testing.T) {
	for _, tt := range []struct{ mtu, frame, buf int }{
		{1500, 1518, 2048}, {9000, 9018, 9216}, {68, 86, 1024}, {9710, 9728, 10240}, {1006, 1024, 1024},
	} {
		if got := MaxFrame(tt.mtu); got != tt.frame {
			t.Errorf("MaxFrame(%d) = %d, want %d", tt.mtu, got, tt.frame)
		}
		if got := BufSizeFor(tt.mtu); got != tt.buf {
			t.Errorf("BufSizeFor(%d) = %d, want %d", tt.mtu, got, tt.buf)
		}
	}
}

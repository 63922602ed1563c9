package nic_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// plainPort is a Port without a 1588 unit.
type plainPort struct{ nic.Port }

func TestTimesyncOfRefusesPlainPort(t *testing.T) {
	if _, err := nic.TimesyncOf(plainPort{}); !errors.Is(err, nic.ErrNoTimesync) {
		t.Fatalf("TimesyncOf(plain port) = %v, want ErrNoTimesync", err)
	}
}

// describedPort says what it is.
type describedPort struct{ nic.Port }

func (describedPort) Describe() string { return "af_xdp generic copy" }

// A refusal names what the port is in words, never a Go type ("*virtio.Port").
func TestDescribeNamesNoGoType(t *testing.T) {
	for _, tt := range []struct {
		p    nic.Port
		want string
	}{
		{plainPort{}, "nic_test port"},
		{&plainPort{}, "nic_test port"},
		{describedPort{}, "af_xdp generic copy"},
		{nil, "no port"},
	} {
		if got := nic.Describe(tt.p); got != tt.want {
			t.Errorf("Describe(%T) = %q, want %q", tt.p, got, tt.want)
		}
	}
	_, err := nic.TimesyncOf(&plainPort{})
	if err == nil || strings.ContainsAny(err.Error(), "*.") || !strings.HasPrefix(err.Error(), "nic_test port: ") {
		t.Errorf("TimesyncOf(*plainPort) = %v, want \"nic_test port: ...\" naming no Go type", err)
	}
}

func TestPTPFrame(t *testing.T) {
	dst := net.HardwareAddr{1, 0x1b, 0x19, 0, 0, 0}
	src := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	for _, tt := range []struct {
		msgType uint8
		seq     uint16
	}{{nic.PTPSync, 0}, {nic.PTPSync, 0x1234}, {1, 0xffff}} {
		f := make([]byte, nic.PTPFrameLen+4)
		for i := range f {
			f[i] = 0xee
		}
		if n := nic.PutPTP(f, dst, src, tt.msgType, tt.seq); n != nic.PTPFrameLen || n < 60 {
			t.Fatalf("PutPTP wrote %d bytes", n)
		}
		seq, typ, ok := nic.PTPSeq(f[:nic.PTPFrameLen])
		if !ok || seq != tt.seq || typ != tt.msgType {
			t.Errorf("PTPSeq = %d %d %v, want %d %d", seq, typ, ok, tt.seq, tt.msgType)
		}
		if f[14+30] != byte(tt.seq>>8) || f[14+31] != byte(tt.seq) {
			t.Errorf("sequenceId bytes % x, want big-endian %04x", f[44:46], tt.seq)
		}
		if f[nic.PTPFrameLen] != 0xee {
			t.Error("PutPTP wrote past the frame")
		}
	}
	ipv4 := make([]byte, 64)
	ipv4[12], ipv4[13] = 0x08, 0x00
	if _, _, ok := nic.PTPSeq(ipv4); ok {
		t.Error("PTPSeq took an IPv4 frame")
	}
	if _, _, ok := nic.PTPSeq(make([]byte, 20)); ok {
		t.Error("PTPSeq took a 20-byte frame")
	}
}

func TestBufTimestampFlagsClearedByGet(t *testing.T) {
	pool, err := nic.NewMempool(sim.NewIOMMU(), 1, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	b := pool.Get()
	b.MarkTimestamp()
	b.SetRxTimestamped()
	if !b.TimestampMarked() || !b.RxTimestamped() {
		t.Fatal("flags not set")
	}
	b.Free()
	b = pool.Get()
	if b.TimestampMarked() || b.RxTimestamped() {
		t.Error("a buffer from Get still carries its last user's timestamp flags")
	}
	b.Free()
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSimRun(t *testing.T) {
	var out bytes.Buffer
	if err := run("", true, 3, 50, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"10.0.0.1:1000 > 10.0.1.1:53 proto 17         50",
		"10.0.0.1:1002 > 10.0.1.1:53 proto 17         50",
		"metric: uiod_example_flows 3",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseFlow(t *testing.T) {
	udp := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
		0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 53}
	tests := []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"udp", udp, true},
		{"short", udp[:30], false},
		{"arp", append(append([]byte{}, udp[:12]...), 0x08, 0x06), false},
		{"icmp", func() []byte { f := append([]byte{}, udp...); f[23] = 1; return f }(), false},
		{"bad ihl", func() []byte { f := append([]byte{}, udp...); f[14] = 0x44; return f }(), false},
	}
	for _, tt := range tests {
		k, ok := parseFlow(tt.frame)
		if ok != tt.ok {
			t.Errorf("%s: ok %v, want %v", tt.name, ok, tt.ok)
		}
		if ok && k.String() != "10.0.0.1:12345 > 10.0.0.2:53 proto 17" {
			t.Errorf("%s: %s", tt.name, k)
		}
	}
}

func TestFlowTableAllocatesNothing(t *testing.T) {
	tab := newFlowTable(64)
	k, _ := parseFlow([]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
		0x45, 0, 0, 28, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80})
	if n := testing.AllocsPerRun(1000, func() { k.sport++; tab.count(k) }); n != 0 {
		t.Fatalf("count allocates %.1f times", n)
	}
	if tab.overflow.Load() == 0 {
		t.Error("1000 flows in a 64-entry table: want some counted as overflow")
	}
}

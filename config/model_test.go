package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// manySimPorts returns n sim ports of q queues of ring descriptors each, reflecting.
func manySimPorts(n, q, ring int) string {
	var b strings.Builder
	b.WriteString("ports:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: p%d, driver: sim, wire: \"pair:w%d\", rx_queues: %d, tx_queues: %d, rx_ring: %d, tx_ring: %d}\n", i, i, q, q, ring, ring)
	}
	b.WriteString("forward: {mode: reflect}\n")
	return b.String()
}

// TestModelLimit: sim ports whose device models need more memory than memory.model_limit
// (auto: MemAvailable) allows are refused at validation, naming the largest ports and
// how many more; within the limit, or with MemAvailable unknown under auto, they pass.
func TestModelLimit(t *testing.T) {
	host := func(avail uint64) *Host { h := HostWithCPUs(4); h.MemAvailable = avail; return &h }
	tests := []struct {
		name string
		text string
		host *Host
		want string // "" to pass
	}{
		{"500 ports of 16 queues of 4096, 8 GiB available", manySimPorts(500, 16, 4096), host(8 << 30),
			"memory.model_limit: the sim ports need 267.2GiB of memory for their device models (p0 547.2MiB, p1 547.2MiB, p2 547.2MiB, p3 547.2MiB, p4 547.2MiB, p5 547.2MiB, p6 547.2MiB, p7 547.2MiB, and 492 more), more than the 8GiB allowed by memory.model_limit auto: MemAvailable of /proc/meminfo"},
		{"one big port, explicit limit", manySimPorts(1, 16, 4096) + "memory: {model_limit: 512MiB}", host(0),
			"memory.model_limit = 512MiB: the sim ports need 547.2MiB of memory for their device models (p0 547.2MiB)"},
		{"largest first", "ports:\n  - {name: small, driver: sim, wire: \"pair:a\"}\n  - {name: big, driver: sim, wire: \"pair:b\", rx_queues: 4, tx_queues: 4}\nforward: {mode: reflect}\nmemory: {model_limit: 16MiB}", host(0),
			"(big 18.1MiB, small 5.3MiB)"},
		{"within MemAvailable", manySimPorts(2, 16, 4096), host(8 << 30), ""},
		{"MemAvailable unknown", manySimPorts(500, 16, 4096), host(0), ""},
		{"pinned ports not counted", "ports:\n  - {name: a, driver: vfio-pci, pci: \"01:00.0\", rx_queues: 16, tx_queues: 16, rx_ring: 4096, tx_ring: 4096}\nforward: {mode: reflect}", host(64 << 20), ""},
		{"limit not a size", manySimPorts(1, 1, 512) + "memory: {model_limit: plenty}", host(0), `memory.model_limit = "plenty": not a size`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Loader{Host: tt.host, LookupEnv: func(string) (string, bool) { return "", false }}.Read(strings.NewReader(tt.text))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant it to contain\n%s", err, tt.want)
			}
			if n := len(fieldErrs(t, err)); n != 1 {
				t.Errorf("%d problems, want 1: %v", n, err)
			}
		})
	}
}

func TestParseMemAvailable(t *testing.T) {
	for _, tt := range []struct {
		text string
		want uint64
	}{
		{"MemTotal:       16314424 kB\nMemFree:         1234 kB\nMemAvailable:   12345678 kB\n", 12345678 << 10},
		{"MemTotal: 1 kB\n", 0},
		{"MemAvailable: lots kB\n", 0},
		{"MemAvailable: 12 MB\n", 0},
		{"MemAvailable: 99999999999999999 kB\n", 0},
	} {
		if got := parseMemAvailable(tt.text); got != tt.want {
			t.Errorf("parseMemAvailable(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// TestModelLimitWithoutMeminfo: under a root without /proc/meminfo, auto bounds the sim
// ports by what the kernel says is free (the ports' memory is this process's whatever the
// root), never by nothing.
func TestModelLimitWithoutMeminfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sysinfo is read on Linux only")
	}
	h := LocalHostAt(t.TempDir())
	limit, why := h.ModelLimit()
	if limit == 0 || why != "sysinfo free and buffer RAM" {
		t.Fatalf("ModelLimit without meminfo = %d (%q), want sysinfo's free RAM", limit, why)
	}
	_, err := Loader{Host: &h, LookupEnv: func(string) (string, bool) { return "", false }}.Read(strings.NewReader(manySimPorts(500, 16, 4096)))
	if err == nil || !strings.Contains(err.Error(), "memory.model_limit auto: sysinfo free and buffer RAM") {
		t.Fatalf("error %v, want the sysinfo bound", err)
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// twoVFIOPorts is two vfio-pci ports with the defaults, forwarding to each other.
const twoVFIOPorts = `
ports:
  - {name: wan, driver: vfio-pci, pci: "01:00.0"}
  - {name: lan, driver: vfio-pci, pci: "01:00.1", rx_queues: 2, tx_queues: 2}
  - {name: model, driver: sim, wire: "pair:m"}
forward: {mode: reflect}
`

func TestDMANeed(t *testing.T) {
	p := DefaultPort()
	// RX: 1536 buffers of 2 KiB + 512 descriptors; TX: 512 descriptors + 512 buffers.
	if got, want := p.DMANeed(pageSize), uint64(3<<20+8<<10+8<<10+1<<20); got != want {
		t.Errorf("4 KiB pages: %d, want %d", got, want)
	}
	if got, want := p.DMANeed(hugePageSize), uint64(4<<20+2<<20+2<<20+2<<20); got != want {
		t.Errorf("2 MiB pages: %d, want %d", got, want)
	}
	p.RxQueues, p.TxQueues, p.RxRing, p.TxRing = 4, 2, 4096, 64
	// RX: (8192+64) × 2 KiB + 64 KiB per queue; TX: 1 KiB + 128 KiB per queue.
	if got, want := p.DMANeed(pageSize), uint64(4*(8256*2048+64<<10)+2*(4<<10+128<<10)); got != want {
		t.Errorf("sized port: %d, want %d", got, want)
	}
}

func TestDMALimitFromHost(t *testing.T) {
	hp := func(total, free uint64) HugePages { return HugePages{Total: total, Free: free, Size: 2 << 20} }
	tests := []struct {
		name string
		host Host
		msg  string // "" when the configuration fits
	}{
		{"nothing bounds it", Host{}, ""},
		{"memlock fits", Host{Memlock: 32 << 20}, ""},
		{"memlock too small", Host{Memlock: 8 << 20},
			"the ports need 12.0MiB of DMA memory (lan 8.0MiB, wan 4.0MiB), more than the 8MiB allowed by memory.dma_limit auto: RLIMIT_MEMLOCK"},
		{"hugepages fit", Host{HugePages: hp(64, 15)}, ""},
		{"hugepages too few", Host{HugePages: hp(64, 14)},
			"the ports need 30MiB of DMA memory (lan 20MiB, wan 10MiB), more than the 28MiB allowed by memory.dma_limit auto: 14 free 2MiB hugepages"},
		{"the smaller of both", Host{Memlock: 16 << 20, HugePages: hp(64, 64)}, "more than the 16MiB allowed by memory.dma_limit auto: RLIMIT_MEMLOCK"},
		{"none free", Host{HugePages: hp(8, 0)}, "more than the 0B allowed by memory.dma_limit auto: 0 free 2MiB hugepages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host
			h.CPUs = testHost.CPUs
			_, err := Loader{Host: &h, LookupEnv: func(string) (string, bool) { return "", false }}.Read(strings.NewReader(twoVFIOPorts))
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			errs := fieldErrs(t, err)
			if len(errs) != 1 || errs[0].Path != "memory.dma_limit" || !strings.Contains(errs[0].Msg, tt.msg) {
				t.Errorf("got %v\nwant memory.dma_limit: %s", err, tt.msg)
			}
		})
	}
	// An explicit limit replaces the host's.
	h := Host{CPUs: testHost.CPUs, Memlock: 1 << 20}
	if _, err := (Loader{Host: &h}).Read(strings.NewReader(twoVFIOPorts + "memory: {dma_limit: 1GiB}")); err != nil {
		t.Errorf("explicit limit: %v", err)
	}
}

func TestLocalHostAtReadsMeminfo(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	meminfo := "MemTotal:  16318504 kB\nHugePages_Total:      16\nHugePages_Free:       12\nHugePages_Rsvd:        0\nHugepagesize:       2048 kB\n"
	if err := os.WriteFile(filepath.Join(root, "proc", "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	h := LocalHostAt(root)
	if h.HugePages != (HugePages{Total: 16, Free: 12, Size: 2 << 20}) || len(h.CPUs) == 0 {
		t.Errorf("host %+v", h)
	}
	if l, why := (Host{HugePages: h.HugePages}).DMALimit(); l != 24<<20 || why != "12 free 2MiB hugepages" {
		t.Errorf("DMALimit() = %d, %q", l, why)
	}
	// No meminfo (or one that is not a regular file): no hugepages known.
	if h := LocalHostAt(t.TempDir()); h.HugePages != (HugePages{}) {
		t.Errorf("without meminfo: %+v", h.HugePages)
	}
	for _, bad := range []string{"HugePages_Total: 4\nHugepagesize: 2048 MB\n", "HugePages_Total: x\n", ""} {
		if hp := parseMeminfo(bad); hp != (HugePages{}) {
			t.Errorf("parseMeminfo(%q) = %+v", bad, hp)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want Size
		out  string
	}{
		{"auto", Size{Auto: true}, "auto"},
		{"0", Size{}, "0B"},
		{"1048576", Size{Bytes: 1 << 20}, "1MiB"},
		{"512MiB", Size{Bytes: 512 << 20}, "512MiB"},
		{"3 GiB", Size{Bytes: 3 << 30}, "3GiB"},
		{"1536KiB", Size{Bytes: 1536 << 10}, "1536KiB"},
		{"100B", Size{Bytes: 100}, "100B"},
		{"8191TiB", Size{Bytes: 8191 << 40}, "8191TiB"},
	}
	for _, tt := range good {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want || got.String() != tt.out {
			t.Errorf("ParseSize(%q) = %+v (%s), %v; want %+v (%s)", tt.in, got, got, err, tt.want, tt.out)
		}
	}
	for _, bad := range []string{"", "MiB", "-1", "+5", "1.5GiB", "1GB", "12 34", "0x10", "8388608TiB", "99999999999999999999", "Auto"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %+v, want an error", bad, got)
		}
	}
}

// FuzzParseSize checks that ParseSize never panics and that what it accepts prints back
// to the same size.
func FuzzParseSize(f *testing.F) {
	seeds := []string{"auto", "0", "512MiB", "3 GiB", "8191TiB", "8388608TiB", "-1", "1.5GiB"}
	testutil.FuzzRoundTrip(f, seeds, ParseSize, Size.String, func(t *testing.T, _ string, sz Size) {
		if humanBytes(sz.Bytes) == "" {
			t.Fatal("empty human size")
		}
	})
}

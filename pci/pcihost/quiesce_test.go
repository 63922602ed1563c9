package pcihost_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/pci/pcihost/pcitest"
)

// TestPlanQuiesceRefuses: a function that does not answer, a truncated or missing config
// file, a function of a host driver: no plan, nothing touched.
func TestPlanQuiesceRefuses(t *testing.T) {
	const a = "0000:09:00.0"
	cfg := "sys/devices/pci0000:09/" + a + "/config"
	tests := []struct {
		name  string
		setup func(tr *pcitest.Tree)
		addr  string
		is    error
		want  string
	}{
		{"vanished", func(tr *pcitest.Tree) { tr.WriteFile(cfg, strings.Repeat("\xff", 256)) }, a, nil, "does not respond"},
		{"truncated config", func(tr *pcitest.Tree) { tr.WriteFile(cfg, "\x86\x80\xc9") }, a, pci.ErrTruncated, "command"},
		{"no config", func(tr *pcitest.Tree) { tr.Remove(cfg) }, a, nil, "config"},
		{"host driver", nil, pcitest.Igb82576, pcihost.ErrRefused, "host driver igb"},
		{"missing", nil, "0000:42:00.0", pcihost.ErrNoDevice, "0000:42:00.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := pcitest.Standard(t)
			tr.AddFunction(pcitest.Function{Addr: a, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: pcihost.DriverUIO, IOMMUGroup: 9})
			tr.AddReset(a)
			if tt.setup != nil {
				tt.setup(tr)
			}
			before := tr.Snapshot()
			h := hostAt(t, tr.Root)
			_, err := h.Quiesce(pci.MustParseAddr(tt.addr))
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Quiesce: %v, want %v naming %q", err, tt.is, tt.want)
			}
			if !maps.Equal(before, tr.Snapshot()) {
				t.Error("a refused quiesce changed the tree")
			}
		})
	}
}

// TestQuiesceVF: a VF is quiesced with its function-level reset, reset_method set to flr
// for the reset and put back after it, also when the reset fails.
func TestQuiesceVF(t *testing.T) {
	const vf = "0000:03:10.0"
	dir := "sys/bus/pci/devices/" + vf + "/"
	tests := []struct {
		name      string
		methods   string // reset_method; "" removes it (a kernel before 5.15)
		failReset bool
		wantErr   string
		want      []string // files written, in order, with their values
	}{
		{"reset_method", "flr\n", false, "", []string{"reset_method=flr", "reset=1", "reset_method=flr"}},
		{"restored", "flr bus\n", false, "", []string{"reset_method=flr", "reset=1", "reset_method=flr bus"}},
		{"old kernel", "", false, "", []string{"reset=1"}},
		{"reset fails", "flr pm\n", true, "reset: device or resource busy", []string{"reset_method=flr", "reset=1", "reset_method=flr pm"}},
		{"no flr", "pm\n", false, "offers no function-level reset", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, tr, k := sriovHost(t)
			must(t, tr.SetVFs(pcitest.Igb82576, 1))
			if tt.methods == "" {
				tr.Remove(dir + "reset_method")
			} else {
				tr.WriteFile(dir+"reset_method", tt.methods)
			}
			if tt.failReset {
				k.FailWrite(dir+"reset", syscall.EBUSY)
			}
			p, err := h.Quiesce(pci.MustParseAddr(vf))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Quiesce: %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && (p == nil && !tt.failReset) {
				t.Fatal("no plan")
			}
			var got []string
			for _, w := range k.Writes() {
				got = append(got, strings.TrimPrefix(w.Path, tr.Path(dir)+"/")+"="+w.Value)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("writes %q, want %q", got, tt.want)
			}
			if tr.Command(vf)&pci.CmdBusMaster != 0 && !errors.Is(err, pcihost.ErrRefused) {
				t.Error("bus mastering still on")
			}
			if p != nil && (p.PhysFn == nil || p.PhysFn.String() != pcitest.Igb82576 || !strings.Contains(p.String(), "function-level reset")) {
				t.Errorf("plan:\n%s", p)
			}
		})
	}
}

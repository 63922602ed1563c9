package pci_test

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcitest"
)

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
			if tr.Command(vf)&pci.CmdBusMaster != 0 && !errors.Is(err, pci.ErrRefused) {
				t.Error("bus mastering still on")
			}
			if p != nil && (p.PhysFn == nil || p.PhysFn.String() != pcitest.Igb82576 || !strings.Contains(p.String(), "function-level reset")) {
				t.Errorf("plan:\n%s", p)
			}
		})
	}
}

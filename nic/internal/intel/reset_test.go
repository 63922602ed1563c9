package intel

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// resetting is a register file whose CTRL reset bits clear on the read after settle more
// reads (never, with settle < 0) once set.
type resetting struct {
	*regs
	settle, left int
}

func (r *resetting) Read32(off uint32) uint32 {
	v := r.regs.Read32(off)
	if off != intelnic.CTRL || v&intelnic.CtrlReset == 0 || r.settle < 0 {
		return v
	}
	if r.left > 0 {
		r.left--
		return v
	}
	r.regs.v[off] = v &^ intelnic.CtrlReset
	return r.regs.v[off]
}

func (r *resetting) Write32(off, v uint32) {
	r.regs.Write32(off, v)
	if off == intelnic.CTRL {
		r.left = r.settle
	}
}

// TestGlobalReset checks the reset sequence: a reset under way is waited out before
// quiesce, the reset bit is set after it, and a reset that never ends is an error naming
// the step.
func TestGlobalReset(t *testing.T) {
	tests := []struct {
		name     string
		underWay bool // CTRL.RST reads 1 at the start
		settle   int
		wantErr  string
	}{
		{"idle device", false, 0, ""},
		{"reset under way", true, 3, ""},
		{"slow reset", false, 5, ""},
		{"reset never ends", false, -1, "global reset"},
		{"stuck in a reset under way", true, -1, "reset under way"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &resetting{regs: newRegs(), settle: tt.settle, left: tt.settle}
			if tt.underWay {
				r.v[intelnic.CTRL] = intelnic.CtrlReset
			}
			quiesced := 0
			err := GlobalReset(r, intelnic.CtrlReset, func() {
				quiesced++
				if r.v[intelnic.CTRL]&intelnic.CtrlReset != 0 {
					t.Error("quiesce ran while a reset was under way")
				}
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || quiesced != 1 {
				t.Fatalf("err %v, quiesce ran %d times", err, quiesced)
			}
			if len(r.writes) == 0 || r.writes[len(r.writes)-1] != intelnic.CTRL {
				t.Errorf("writes %#x: the reset bit is not the last write", r.writes)
			}
		})
	}
}

package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// finishE2E waits for a guest running one of the testdata scripts (see qemutest.VM.Finish)
// and returns what the script reported; it fails t at once when the script failed.
func finishE2E(t *testing.T, vm *qemutest.VM) (*qemutest.Result, *e2eReport) {
	t.Helper()
	res := vm.Finish(t)
	rep := parseE2E(res.Output)
	if res.Exit != 0 {
		t.Fatalf("guest script exit status %d: %s", res.Exit, strings.Join(rep.fails, "; "))
	}
	return res, rep
}

// doneE2E tells the guest script its host side is done (an error if the control port
// refuses), then finishes the guest as finishE2E does.
func doneE2E(t *testing.T, vm *qemutest.VM) (*qemutest.Result, *e2eReport) {
	t.Helper()
	if err := vm.Send("done"); err != nil {
		t.Errorf("tell the guest to stop: %v", err)
	}
	return finishE2E(t, vm)
}

// checkRunExit is an error unless uiod run exited with status 0 after SIGTERM.
func (rep *e2eReport) checkRunExit(t *testing.T) {
	t.Helper()
	if rep.runExit != 0 {
		t.Errorf("uiod run exited with status %d after SIGTERM, want 0", rep.runExit)
	}
}

// takeSnapshot asks the guest script for a snapshot called name and waits until it is
// taken.
func takeSnapshot(vm *qemutest.VM, name string) error {
	if err := vm.Send(name); err != nil {
		return fmt.Errorf("guest control port: %w", err)
	}
	if _, err := vm.WaitOutput("E2E snapshot "+name+" taken", time.Minute); err != nil {
		return fmt.Errorf("snapshot %s: %w", name, err)
	}
	return nil
}

// e2eReport is what the guest script printed on its "E2E " lines.
type e2eReport struct {
	fails   []string             // "FAIL ..." lines
	snaps   map[string]*snapshot // by name: start, then one after each direction
	devices []byte               // `uiod devices --json` after the restore
	log     []string             // the daemon's log
	runExit int                  // uiod run's exit status after SIGTERM; -1 when not reported
	intx    map[string]string    // by NIC address: the uio port's INTx interrupt number
	orig    map[string]string    // by NIC address: its driver before uiod bind ("" for none)
}

// snapshot is the guest's interrupt counts and the daemon's /status at one point.
type snapshot struct {
	irqs   []irq
	status []byte
}

// logged reports whether a line of the daemon's log contains every one of words.
func (r *e2eReport) logged(words ...string) bool {
	return slices.ContainsFunc(r.log, func(l string) bool {
		for _, w := range words {
			if !strings.Contains(l, w) {
				return false
			}
		}
		return true
	})
}

// snap returns the snapshot called name, empty if the guest took none.
func (r *e2eReport) snap(name string) *snapshot {
	if s := r.snaps[name]; s != nil {
		return s
	}
	return &snapshot{}
}

// irq is one /proc/interrupts line: the interrupt, its count summed over the CPUs, and
// the rest of the line (chip, type and the handlers' names).
type irq struct {
	num   string
	count uint64
	desc  string
}

// parseIRQLine parses a /proc/interrupts line such as
// " 27:   17   IR-PCI-MSI 524288-edge   vfio-msix[0](0000:01:00.0)".
func parseIRQLine(line string) (irq, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
		return irq{}, false
	}
	q := irq{num: strings.TrimSuffix(f[0], ":")}
	i := 1
	for ; i < len(f); i++ {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			break
		}
		q.count += n
	}
	if i == 1 {
		return irq{}, false
	}
	q.desc = strings.Join(f[i:], " ")
	return q, true
}

// parseE2E reads the guest script's output.
func parseE2E(out string) *e2eReport {
	rep := &e2eReport{snaps: map[string]*snapshot{}, runExit: -1, intx: map[string]string{}, orig: map[string]string{}}
	snap := func(name string) *snapshot {
		if rep.snaps[name] == nil {
			rep.snaps[name] = &snapshot{}
		}
		return rep.snaps[name]
	}
	var section *[]byte
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		rest, ok := strings.CutPrefix(line, "E2E ")
		if !ok {
			if section != nil {
				*section = append(*section, line+"\n"...)
			}
			continue
		}
		word, args, _ := strings.Cut(rest, " ")
		switch {
		case word == "FAIL":
			rep.fails = append(rep.fails, args)
		case word == "irq":
			name, l, _ := strings.Cut(args, " ")
			if q, ok := parseIRQLine(l); ok {
				s := snap(name)
				s.irqs = append(s.irqs, q)
			}
		case word == "STATUS-BEGIN":
			section = &snap(args).status
		case word == "DEVICES-BEGIN":
			section = &rep.devices
		case word == "STATUS-END" || word == "DEVICES-END":
			section = nil
		case word == "log":
			rep.log = append(rep.log, args)
		case word == "intx":
			if addr, num, ok := strings.Cut(args, " "); ok && num != "" {
				rep.intx[addr] = num
			}
		case word == "original":
			addr, drv, _ := strings.Cut(args, " ")
			rep.orig[addr] = strings.TrimSpace(drv)
		case strings.HasPrefix(word, "run-exit="):
			if n, err := strconv.Atoi(strings.TrimPrefix(word, "run-exit=")); err == nil {
				rep.runExit = n
			}
		}
	}
	return rep
}

// irqDelta returns how often the interrupts whose description contains every one of words
// fired from before to after, and whether after has any.
func irqDelta(before, after *snapshot, words ...string) (uint64, bool) {
	return irqLinesDelta(before, after, irqLines(after, "", words...))
}

// irqLines returns the numbers of after's interrupts that are num (if not "") and whose
// description contains every one of words.
func irqLines(after *snapshot, num string, words ...string) map[string]bool {
	lines := map[string]bool{}
next:
	for _, q := range after.irqs {
		if num != "" && q.num != num {
			continue
		}
		for _, w := range words {
			if !strings.Contains(q.desc, w) {
				continue next
			}
		}
		lines[q.num] = true
	}
	return lines
}

// irqLinesDelta returns how often the interrupts numbered lines fired from before to
// after, and whether there are any.
func irqLinesDelta(before, after *snapshot, lines map[string]bool) (uint64, bool) {
	counts := map[string]uint64{}
	for _, q := range before.irqs {
		counts[q.num] = q.count
	}
	var d uint64
	for _, q := range after.irqs {
		if lines[q.num] {
			d += q.count - counts[q.num]
		}
	}
	return d, len(lines) > 0
}

package integration

import (
	"slices"
	"strings"
	"testing"
)

// TestParseIRQLine checks the reading of /proc/interrupts lines the e2e guest prints.
func TestParseIRQLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		want irq
	}{
		{" 27:        200  IR-PCI-MSI 524288-edge      vfio-msix[0](0000:01:00.0)", true,
			irq{"27", 200, "IR-PCI-MSI 524288-edge vfio-msix[0](0000:01:00.0)"}},
		{" 22:   3   4  IR-IO-APIC  22-fasteoi   uio_pci_generic", true,
			irq{"22", 7, "IR-IO-APIC 22-fasteoi uio_pci_generic"}},
		{"NMI:  0  Non-maskable interrupts", true, irq{"NMI", 0, "Non-maskable interrupts"}},
		{"           CPU0       ", false, irq{}},
		{"27: vfio-msix", false, irq{}},
		{"", false, irq{}},
		{"27:", false, irq{}},
	} {
		got, ok := parseIRQLine(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseIRQLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseIRQLine checks that any line parses without panicking, and that a parsed line
// keeps its first field as the interrupt's name and a normalised description.
func FuzzParseIRQLine(f *testing.F) {
	f.Add(" 27:        200  IR-PCI-MSI 524288-edge      vfio-msix[0](0000:01:00.0)")
	f.Add(" 22:   3   4  IR-IO-APIC  22-fasteoi   uio_pci_generic")
	f.Add("27: 18446744073709551615 1 x")
	f.Fuzz(func(t *testing.T, line string) {
		q, ok := parseIRQLine(line)
		if !ok {
			return
		}
		if f := strings.Fields(line); f[0] != q.num+":" {
			t.Errorf("parseIRQLine(%q) = %+v: interrupt name is not the first field %q", line, q, f[0])
		}
		if q.desc != strings.Join(strings.Fields(q.desc), " ") {
			t.Errorf("parseIRQLine(%q) = %+v: description not normalised", line, q)
		}
	})
}

// TestParseE2E checks the reading of the e2e guest script's output: snapshots, sections,
// the daemon's log and exit status, failures.
func TestParseE2E(t *testing.T) {
	out := strings.Join([]string{
		"E2E nics 0000:01:00.0 0000:02:00.0 kernel=x iommu=1 noiommu=0",
		"noise outside any section",
		"E2E irq start  27:  0  IR-PCI-MSI 524288-edge  vfio-msix[0](0000:01:00.0)",
		"E2E STATUS-BEGIN start",
		`{"ports": [],`,
		`"threads": []}`,
		"E2E STATUS-END start",
		"E2E irq nic1-to-nic2  27:  200  IR-PCI-MSI 524288-edge  vfio-msix[0](0000:01:00.0)",
		"E2E FAIL something broke",
		"E2E run-exit=3",
		"E2E log INFO stopped cleanly",
		"E2E DEVICES-BEGIN",
		"[]",
		"E2E DEVICES-END",
		"trailing noise",
	}, "\r\n")
	rep := parseE2E(out)
	if got, want := string(rep.snap("start").status), "{\"ports\": [],\n\"threads\": []}\n"; got != want {
		t.Errorf("start status = %q, want %q", got, want)
	}
	if n, ok := irqDelta(rep.snap("start"), rep.snap("nic1-to-nic2"), "vfio-msix", "0000:01:00.0"); !ok || n != 200 {
		t.Errorf("vfio-msix delta = %d, %v; want 200, true", n, ok)
	}
	if _, ok := irqDelta(rep.snap("start"), rep.snap("nic1-to-nic2"), "uio_pci_generic"); ok {
		t.Error("found a uio_pci_generic interrupt that was never printed")
	}
	if len(rep.snap("missing").irqs) != 0 {
		t.Error("a snapshot never taken has interrupts")
	}
	if rep.runExit != 3 {
		t.Errorf("run exit = %d, want 3", rep.runExit)
	}
	if len(rep.fails) != 1 || rep.fails[0] != "something broke" {
		t.Errorf("fails = %q", rep.fails)
	}
	if len(rep.log) != 1 || rep.log[0] != "INFO stopped cleanly" {
		t.Errorf("log = %q", rep.log)
	}
	if string(rep.devices) != "[]\n" {
		t.Errorf("devices = %q", rep.devices)
	}
	if rep := parseE2E("E2E run-exit=x\n"); rep.runExit != -1 {
		t.Errorf("run exit of a bad line = %d, want -1", rep.runExit)
	}
}

// TestWakeCountsProblems checks the e2e test's wake-up accounting: counts from a loaded
// machine, where few probes find the thread asleep, pass; a thread that never slept, a
// wake-up the receiving port's interrupt does not account for, or an interrupt of the
// port that received nothing fail.
func TestWakeCountsProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    wakeCounts
		want string // "" for no problem, else a word of the only problem
	}{
		{"every probe slept", wakeCounts{sleeps: 200, woken: 200, own: 200}, ""},
		{"loaded machine", wakeCounts{sleeps: 12, woken: 11, spurious: 1, own: 14}, ""},
		{"one sleep", wakeCounts{sleeps: 1, woken: 1, own: 1}, ""},
		{"never slept", wakeCounts{woken: 0, own: 0}, "never slept"},
		{"no interrupt", wakeCounts{sleeps: 3}, "at least once"},
		{"other port fired", wakeCounts{sleeps: 5, woken: 5, own: 5, other: 1}, "received nothing"},
		{"wake-ups not the port's", wakeCounts{sleeps: 5, woken: 6, own: 5}, "not the receiving port's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.w.problems()
			if tc.want == "" {
				if len(p) != 0 {
					t.Errorf("problems = %q, want none", p)
				}
				return
			}
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Errorf("problems = %q, want one with %q", p, tc.want)
			}
		})
	}
}

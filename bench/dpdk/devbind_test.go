package dpdk

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/benchstat"
	"github.com/uiod/uiod/testrig/qemutest"
)

// devbindStates are the guest script's listing rounds in order, with the driver the igb
// NICs must be on in each.
var devbindStates = []struct{ name, igbDriver string }{
	{"cold", "igb"}, {"before", "igb"}, {"bound", "vfio-pci"}, {"restored", "igb"},
}

// devbindTools are the guest script's listings: the two compared, the JSON uiod is parsed
// from, and the lspci run dpdk-devbind parses (it runs it nine times per --status).
var devbindTools = []struct{ name, command string }{
	{"uiod", "uiod devices"},
	{"devbind", "dpdk-devbind.py --status"},
	{"uiod-json", "uiod devices --json"},
	{"lspci", "lspci -Dvmmnnk"},
}

// TestDevbindSideBySide boots one guest with two igb NICs and a virtio-net NIC behind an
// emulated IOMMU and lists its network devices with `uiod devices` and Debian's
// `dpdk-devbind.py --status` (under a minimal Python, with lspci) before binding, with the
// igb NICs bound to vfio-pci by `uiod bind`, and after `uiod unbind --restore`: in every
// state both must report the same functions with the same vendor:device and driver. It logs
// the listings side by side and how long each took in the guest. It runs only with
// UIOD_DPDK_BENCH=1.
func TestDevbindSideBySide(t *testing.T) {
	if os.Getenv("UIOD_DPDK_BENCH") != "1" {
		t.Skip("the dpdk-devbind side-by-side runs by hand: UIOD_DPDK_BENCH=1 go test -run TestDevbindSideBySide ./bench/dpdk/")
	}
	qemutest.Require(t)
	files := devbindFiles(t, qemutest.BuildUIOD(t))
	script, err := os.ReadFile("devbind.sh")
	if err != nil {
		t.Fatal(err)
	}
	vm := qemutest.Start(t, qemutest.Options{
		IOMMU:     true,
		NICs:      3,
		NICModels: []string{"igb", "igb", "virtio"},
		Files:     files,
		Script:    string(script),
		Timeout:   10 * time.Minute,
	})
	res, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 0 {
		t.Fatalf("guest script exited %d:\n%s", res.Exit, res.Output)
	}
	ls, err := parseListings(res.Output)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	igb := guestIGB(res.Output)
	if len(igb) != 2 {
		t.Fatalf("guest found igb NICs %q, want 2:\n%s", igb, res.Output)
	}
	var report strings.Builder
	for _, l := range strings.Split(res.Output, "\n") {
		if rest, ok := strings.CutPrefix(l, "DEVBIND pycache "); ok {
			t.Logf("guest Python: %s", rest)
		}
	}
	fmt.Fprintf(&report, "guest: 1 vCPU TCG, intel-iommu, 2 igb (%s) + 1 virtio-net, kernel %s\n", strings.Join(igb, " "), res.Kernel)
	for _, st := range devbindStates {
		got := map[string]listing{}
		for _, l := range ls {
			if l.state == st.name {
				got[l.tool] = l
			}
		}
		for _, tool := range devbindTools {
			l, ok := got[tool.name]
			if !ok {
				t.Fatalf("%s: no %s listing:\n%s", st.name, tool.command, res.Output)
			}
			if l.rc != 0 {
				t.Errorf("%s: %s exited %d:\n%s", st.name, tool.command, l.rc, l.out)
			}
		}
		rows := compareListings(t, st.name, st.igbDriver, igb, got)
		fmt.Fprintf(&report, "\n### %s\n\n%s\n```\n%s\n```\n", st.name, rows,
			sideBySide(got["uiod"].out, got["devbind"].out))
	}
	fmt.Fprintf(&report, "\n%s%s", devbindTimes(ls), stderrSummary(ls))
	t.Log("\n" + report.String())
	if path := os.Getenv("UIOD_DEVBIND_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// guestIGB returns the igb NICs' addresses the guest script printed ("DEVBIND igb A B").
func guestIGB(out string) []string {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "DEVBIND igb "); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// compareListings checks that uiod and dpdk-devbind list the same network functions with
// the same vendor:device, driver and interfaces in one state, and that the igb NICs are on
// igbDriver; it returns the comparison as a markdown table.
func compareListings(t *testing.T, state, igbDriver string, igb []string, got map[string]listing) string {
	t.Helper()
	u, err := parseUIODJSON(got["uiod-json"].out)
	if err != nil {
		t.Errorf("%s: %v", state, err)
		return ""
	}
	d, err := devbindBindings(got["devbind"].out, got["lspci"].out)
	if err != nil {
		t.Errorf("%s: %v", state, err)
		return ""
	}
	table, mismatches := compareBindings(u, d)
	for _, m := range mismatches {
		t.Errorf("%s: %s", state, m)
	}
	for _, a := range igb {
		if x := u[a]; x.driver != igbDriver {
			t.Errorf("%s: igb NIC %s is on %q, want %q", state, a, x.driver, igbDriver)
		}
	}
	return table
}

// compareBindings compares uiod's functions u with dpdk-devbind's d: it returns a markdown
// table of both, a row per address, and a sentence for each address they disagree on.
func compareBindings(u, d map[string]binding) (table string, mismatches []string) {
	var addrs []string
	for a := range u {
		addrs = append(addrs, a)
	}
	for a := range d {
		if _, ok := u[a]; !ok {
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	var b strings.Builder
	b.WriteString("| address | vendor:device (uiod / devbind) | driver (uiod / devbind) | interfaces (uiod / devbind) | agree |\n|---|---|---|---|---|\n")
	for _, a := range addrs {
		x, inU := u[a]
		y, inD := d[a]
		agree := inU && inD && x == y
		if !agree {
			mismatches = append(mismatches, fmt.Sprintf("%s: uiod devices says %s, dpdk-devbind says %s", a, describe(x, inU), describe(y, inD)))
		}
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s | %s / %s | %s |\n", a, orNone(x.id), orNone(y.id),
			orNone(x.driver), orNone(y.driver), orNone(x.interfaces), orNone(y.interfaces), yesNo(agree))
	}
	return b.String(), mismatches
}

func describe(b binding, listed bool) string {
	if !listed {
		return "nothing (not listed)"
	}
	return fmt.Sprintf("%s driver=%q interfaces=%q", b.id, b.driver, b.interfaces)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// sideBySide lays out two texts in two columns.
func sideBySide(left, right string) string {
	l := strings.Split(strings.TrimRight(left, "\n"), "\n")
	r := strings.Split(strings.Trim(right, "\n"), "\n")
	w := 0
	for _, s := range l {
		w = max(w, len([]rune(s)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s | %s\n", w, "uiod devices", "dpdk-devbind.py --status")
	fmt.Fprintf(&b, "%s-+-%s\n", strings.Repeat("-", w), strings.Repeat("-", 24))
	for i := 0; i < max(len(l), len(r)); i++ {
		var a, c string
		if i < len(l) {
			a = l[i]
		}
		if i < len(r) {
			c = r[i]
		}
		fmt.Fprintf(&b, "%s%s | %s\n", a, strings.Repeat(" ", w-len([]rune(a))), c)
	}
	return strings.TrimRight(b.String(), "\n")
}

// devbindTimes is the table of how long each listing took in the guest: wall time, and the
// CPU time of the command and the children it waited for (busybox time, 10 ms resolution).
func devbindTimes(ls []listing) string {
	var b strings.Builder
	b.WriteString("| state |")
	for _, tool := range devbindTools {
		fmt.Fprintf(&b, " `%s` s (CPU s) |", tool.command)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(devbindTools)) + "\n")
	for _, st := range devbindStates {
		fmt.Fprintf(&b, "| %s |", st.name)
		for _, tool := range devbindTools {
			i := slices.IndexFunc(ls, func(l listing) bool { return l.state == st.name && l.tool == tool.name })
			if i < 0 {
				b.WriteString(" - |")
				continue
			}
			fmt.Fprintf(&b, " %.2f (%.2f) |", ls[i].real, ls[i].user+ls[i].sys)
		}
		b.WriteString("\n")
	}
	b.WriteString("| median of the warm states |")
	for _, tool := range devbindTools {
		var real, cpu []float64
		for _, l := range ls {
			if l.tool == tool.name && l.state != devbindStates[0].name {
				real, cpu = append(real, l.real), append(cpu, l.user+l.sys)
			}
		}
		fmt.Fprintf(&b, " %.2f (%.2f) |", benchstat.Median(real), benchstat.Median(cpu))
	}
	b.WriteString("\n")
	return b.String()
}

// stderrSummary lists the distinct lines the listings wrote to stderr, with how often.
func stderrSummary(ls []listing) string {
	type key struct{ tool, line string }
	n := map[key]int{}
	var order []key
	for _, l := range ls {
		if l.stderr == "" {
			continue
		}
		for _, line := range strings.Split(l.stderr, "\n") {
			k := key{l.tool, line}
			if n[k] == 0 {
				order = append(order, k)
			}
			n[k]++
		}
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "\nstderr of %s (%d× over %d states): %s", k.tool, n[k], len(devbindStates), k.line)
	}
	return b.String()
}

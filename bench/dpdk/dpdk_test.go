package dpdk

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

var (
	rounds   = flag.Int("dpdk.rounds", 2, "rounds of every forwarder, the order rotated each round")
	probes   = flag.Int("dpdk.probes", 5000, "probes per forwarder per round")
	interval = flag.Duration("dpdk.interval", 400*time.Microsecond, "gap between probes")
	only     = flag.String("dpdk.forwarders", "", "comma-separated subset of the forwarders (default all)")
	burst    = flag.Int("dpdk.burst", 20000, "probes of the burst after the idle stretch, 10 µs apart (0: no burst)")
	burstGap = flag.Duration("dpdk.burst-gap", 10*time.Microsecond, "gap between the burst's probes")
)

// forwarders are measured in this order in the first round, rotated by one each round.
var forwarders = []string{"testpmd", "l3fwd-power", "uiod-busy", "uiod-adaptive", "uiod-auto"}

// pmdDir is where Debian's EAL looks for its driver plugins.
const pmdDir = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0"

// pmds are the plugins the guest needs: the PCI bus, the ring mempool and the igb PMD, by
// the names EAL loads from its plugin directory (it takes *.so there).
var pmds = []string{"librte_bus_pci.so", "librte_bus_vdev.so", "librte_mempool_ring.so", "librte_net_e1000.so"}

// TestDPDKSideBySide boots one guest with two igb NICs on vfio-pci and measures each
// forwarder in turn with the host's probes from NIC 0 to NIC 1. It runs only with
// UIOD_DPDK_BENCH=1 and UIOD_L3FWD_POWER naming a built l3fwd-power (run.sh sets both).
func TestDPDKSideBySide(t *testing.T) {
	if os.Getenv("UIOD_DPDK_BENCH") != "1" {
		t.Skip("the DPDK side-by-side benchmark runs by hand: bench/dpdk/run.sh")
	}
	qemutest.Require(t)
	testpmd, err := exec.LookPath("dpdk-testpmd")
	if err != nil {
		t.Fatalf("dpdk-testpmd: %v (apt-get install dpdk)", err)
	}
	l3fwd := os.Getenv("UIOD_L3FWD_POWER")
	if l3fwd == "" {
		t.Fatal("UIOD_L3FWD_POWER must name the built l3fwd-power (bench/dpdk/run.sh builds it)")
	}
	uiod := qemutest.BuildUIOD(t)
	files := []qemutest.Entry{
		qemutest.Binary("uiod", uiod),
		qemutest.Binary("dpdk-testpmd", testpmd),
		qemutest.Binary("l3fwd-power", l3fwd),
	}
	libs, err := closure(t, append([]string{testpmd, l3fwd}, plugins()...))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, libs...)
	have := map[string]bool{}
	for _, e := range files {
		have[e.Name] = true
	}
	for _, p := range pmds {
		real, err := filepath.EvalSymlinks(filepath.Join(pmdDir, p))
		if err != nil {
			t.Fatalf("PMD %s: %v (apt-get install dpdk)", p, err)
		}
		if !have[real[1:]] {
			files = append(files, qemutest.File(real[1:], real))
			have[real[1:]] = true
		}
		files = append(files, symlink(filepath.Join(pmdDir, p), real))
	}
	if p := "/usr/share/misc/pci.ids"; fileExists(p) {
		files = append(files, qemutest.File(p[1:], p))
	}
	script, err := os.ReadFile("guest.sh")
	if err != nil {
		t.Fatal(err)
	}

	order := forwarders
	if *only != "" {
		order = strings.Split(*only, ",")
	}
	timeout := time.Duration(*rounds*len(order))*3*time.Minute + 5*time.Minute
	vm := qemutest.Start(t, qemutest.Options{
		IOMMU:     true,
		CPUs:      2,
		Memory:    "2G",
		HugePages: 512,
		// Without it a 2-vCPU TCG guest falls back to the HPET clock: every clock read is an
		// emulated MMIO access (no vDSO), which would tax time.Now() far more than rdtsc.
		Cmdline: []string{"tsc=reliable"},
		Files:   files,
		Script:  string(script),
		Timeout: timeout,
	})
	if _, err := vm.WaitOutput("BENCH bound", 5*time.Minute); err != nil {
		t.Fatalf("guest did not bind the NICs: %v", err)
	}
	var runs []run
	for r := 0; r < *rounds; r++ {
		for i := range order {
			name := order[(i+r)%len(order)]
			res, err := measure(t, vm, name, r, len(runs))
			if err != nil {
				t.Errorf("round %d %s: %v", r+1, name, err)
				break
			}
			runs = append(runs, res)
		}
		if t.Failed() {
			break
		}
	}
	vm.Send("done")
	out, err := vm.Wait()
	if err != nil {
		t.Logf("guest: %v", err)
	}
	if t.Failed() && out != nil {
		t.Logf("guest output:\n%s", out.Output)
		t.Logf("guest console tail:\n%s", tailLines(out.Console, 60))
	}
	if out != nil {
		for _, l := range strings.Split(out.Output, "\n") {
			if strings.HasPrefix(l, "BENCH devices ") || strings.HasPrefix(l, "BENCH THREADS ") {
				t.Log(strings.TrimPrefix(l, "BENCH "))
			}
		}
	}
	report(t, runs)
}

// run is one forwarder's measurement in one round.
type run struct {
	name       string
	round      int
	lat        latencyResult
	probeCPU   float64 // process CPU % while probed
	idleCPU    float64 // process CPU % with no traffic
	probeIRQs  uint64
	idleIRQs   uint64
	probeSecs  float64
	latencyErr string
	// burst is the percentage of the burst's probes that came back: how much of a
	// 100 kpps burst the forwarder passes (QEMU's I/O thread bounds it too).
	burst float64
}

// latencyResult is the part of `uiod latency --json` the report uses.
type latencyResult struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Late     uint64 `json:"late"`
	Lost     uint64 `json:"lost"`
	MedianNs int64  `json:"median_ns"`
	P99Ns    int64  `json:"p99_ns"`
	MaxNs    int64  `json:"max_ns"`
}

// measure has the guest start name, probes it from the host, and reads the guest's counts.
func measure(t *testing.T, vm *qemutest.VM, name string, round, seq int) (run, error) {
	r := run{name: name, round: round + 1}
	if err := vm.Send("start " + name); err != nil {
		return r, err
	}
	out, err := vm.WaitOutput("BENCH READY "+name, 4*time.Minute)
	if err != nil || strings.Count(out, "BENCH READY "+name) <= round {
		// WaitOutput matches any earlier round's line too: wait for this round's.
		deadline := time.Now().Add(4 * time.Minute)
		for err == nil && strings.Count(out, "BENCH READY "+name) <= round && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			out, err = vm.WaitOutput("BENCH READY "+name, time.Minute)
		}
		if err != nil {
			return r, fmt.Errorf("not ready: %v\n%s", err, tailLines(out, 30))
		}
	}
	lat, err := probe(t, vm, name, *probes, *interval)
	if err != nil {
		r.latencyErr = err.Error()
		t.Logf("%s round %d: %v", name, round+1, err)
	} else {
		r.lat = *lat
	}
	if err := vm.Send("probed"); err != nil {
		return r, err
	}
	want := seq + 1 // RESULT lines so far, this one included
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ = vm.WaitOutput("BENCH RESULT", time.Minute)
		lines := grepPrefix(out, "BENCH RESULT ")
		if len(lines) >= want {
			if r, err = parseResult(r, lines[want-1]); err != nil {
				return r, err
			}
			return r, burstAndStop(t, vm, &r)
		}
		if strings.Contains(out, "BENCH FAIL") || time.Now().After(deadline) {
			return r, fmt.Errorf("no result:\n%s", tailLines(out, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// burstAndStop sends the burst to the forwarder of r (after its idle stretch), records
// what came back and has the guest stop the forwarder.
func burstAndStop(t *testing.T, vm *qemutest.VM, r *run) error {
	if *burst > 0 {
		lat, err := probe(t, vm, r.name+"-burst", *burst, *burstGap)
		if err != nil {
			t.Logf("%s round %d burst: %v", r.name, r.round, err)
		} else {
			r.burst = 100 * float64(lat.Received) / float64(max(lat.Sent, 1))
		}
	}
	want := strings.Count(output(vm), "BENCH STOPPED "+r.name) + 1
	if err := vm.Send("stop"); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for strings.Count(output(vm), "BENCH STOPPED "+r.name) < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not stopped:\n%s", r.name, tailLines(output(vm), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// output is the guest script's output so far.
func output(vm *qemutest.VM) string {
	out, _ := vm.WaitOutput("", time.Second) // every output contains ""
	return out
}

// probe sends count probes gap apart into NIC 0's wire and receives them from NIC 1's.
func probe(t *testing.T, vm *qemutest.VM, name string, count int, gap time.Duration) (*latencyResult, error) {
	host := hostUIOD(t)
	js := filepath.Join(t.TempDir(), name+".json")
	args := []string{"latency",
		"--tx", "unix:" + vm.NICs[0].HostSocket + "," + vm.NICs[0].GuestSocket,
		"--rx", "unix:" + vm.NICs[1].HostSocket + "," + vm.NICs[1].GuestSocket,
		"--count", strconv.Itoa(count), "--interval", gap.String(),
		"--timeout", "1s", "--label", name, "--json", js}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, host, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("uiod latency: %w\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	data, err := os.ReadFile(js)
	if err != nil {
		return nil, err
	}
	var lr latencyResult
	if err := json.Unmarshal(data, &lr); err != nil {
		return nil, fmt.Errorf("uiod latency --json: %w", err)
	}
	return &lr, nil
}

var hostBin string

// hostUIOD builds the host's uiod once.
func hostUIOD(t *testing.T) string {
	if hostBin == "" {
		dir, err := os.MkdirTemp("", "uiod-dpdk-bench-")
		if err != nil {
			t.Fatal(err)
		}
		hostBin = filepath.Join(dir, "uiod")
		root, err := qemutest.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-o", hostBin, "./cmd/uiod")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build host uiod: %v\n%s", err, out)
		}
	}
	return hostBin
}

// parseResult fills r from a "BENCH RESULT name k=v ..." line.
func parseResult(r run, line string) (run, error) {
	f := strings.Fields(line)
	if len(f) < 3 || f[2] != r.name {
		return r, fmt.Errorf("result line %q is not %s's", line, r.name)
	}
	kv := map[string]float64{}
	for _, w := range f[3:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return r, fmt.Errorf("result %q: %s: %v", line, k, err)
		}
		kv[k] = x
	}
	if kv["probe_s"] <= 0 || kv["idle_s"] <= 0 {
		return r, fmt.Errorf("result %q has no durations", line)
	}
	// USER_HZ is 100 on x86 Linux: a tick is 10 ms.
	r.probeSecs = kv["probe_s"]
	r.probeCPU = kv["probe_ticks"] / kv["probe_s"]
	r.idleCPU = kv["idle_ticks"] / kv["idle_s"]
	r.probeIRQs = uint64(kv["probe_irqs"])
	r.idleIRQs = uint64(kv["idle_irqs"])
	return r, nil
}

// report logs every run and, per forwarder, the median over the rounds, with the ratios
// the comparison cares about.
func report(t *testing.T, runs []run) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| forwarder | round | CPU %% probed | CPU %% idle | IRQs probed | IRQs idle | p50 µs | p99 µs | max µs | lost | burst %% |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %d | %d | %.1f | %.1f | %.1f | %d | %.1f |\n", r.name, r.round,
			r.probeCPU, r.idleCPU, r.probeIRQs, r.idleIRQs, us(r.lat.MedianNs), us(r.lat.P99Ns), us(r.lat.MaxNs),
			r.lat.Sent-r.lat.Received, r.burst)
	}
	med := map[string]run{}
	for _, name := range forwarders {
		var rs []run
		for _, r := range runs {
			if r.name == name && r.latencyErr == "" {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		m := run{name: name}
		m.probeCPU = median(rs, func(r run) float64 { return r.probeCPU })
		m.idleCPU = median(rs, func(r run) float64 { return r.idleCPU })
		m.lat.MedianNs = int64(median(rs, func(r run) float64 { return float64(r.lat.MedianNs) }))
		m.lat.P99Ns = int64(median(rs, func(r run) float64 { return float64(r.lat.P99Ns) }))
		m.burst = median(rs, func(r run) float64 { return r.burst })
		med[name] = m
	}
	fmt.Fprintf(&b, "\nmedians over rounds:\n| forwarder | CPU %% probed | CPU %% idle | p50 µs | p99 µs | burst %% |\n|---|---|---|---|---|---|\n")
	for _, name := range forwarders {
		if m, ok := med[name]; ok {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, m.probeCPU, m.idleCPU, us(m.lat.MedianNs), us(m.lat.P99Ns), m.burst)
		}
	}
	var ratios strings.Builder
	ratio := func(what string, a, b string, f func(run) float64) {
		x, ok1 := med[a]
		y, ok2 := med[b]
		if ok1 && ok2 && f(y) != 0 {
			fmt.Fprintf(&ratios, "%s %s / %s: %.2f×\n", what, a, b, f(x)/f(y))
		}
	}
	p50 := func(r run) float64 { return float64(r.lat.MedianNs) }
	p99 := func(r run) float64 { return float64(r.lat.P99Ns) }
	ratio("p50", "uiod-busy", "testpmd", p50)
	ratio("p99", "uiod-busy", "testpmd", p99)
	ratio("probed CPU", "uiod-busy", "testpmd", func(r run) float64 { return r.probeCPU })
	ratio("idle CPU", "uiod-adaptive", "l3fwd-power", func(r run) float64 { return r.idleCPU })
	ratio("p50", "uiod-adaptive", "l3fwd-power", p50)
	ratio("p99", "uiod-adaptive", "l3fwd-power", p99)
	ratio("probed CPU", "uiod-auto", "l3fwd-power", func(r run) float64 { return r.probeCPU })
	ratio("p50", "uiod-auto", "l3fwd-power", p50)
	ratio("p99", "uiod-auto", "l3fwd-power", p99)
	burstGot := func(r run) float64 { return r.burst }
	ratio("burst received", "uiod-busy", "testpmd", burstGot)
	ratio("burst received", "uiod-adaptive", "l3fwd-power", burstGot)
	ratio("burst received", "uiod-auto", "l3fwd-power", burstGot)
	fmt.Fprintf(&b, "\nratios of the medians (same boot):\n%s", ratios.String())
	t.Log(b.String())
	if path := os.Getenv("UIOD_DPDK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func median(rs []run, f func(run) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// plugins are the PMD files whose own libraries the guest needs as well.
func plugins() []string {
	var p []string
	for _, n := range pmds {
		p = append(p, filepath.Join(pmdDir, n))
	}
	return p
}

// closure returns initramfs entries for every shared library the ELF files need,
// transitively, and the dynamic loader, each at the path the loader looks in.
func closure(t *testing.T, bins []string) ([]qemutest.Entry, error) {
	seen := map[string]bool{}
	var entries []qemutest.Entry
	queue := append([]string(nil), bins...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		f, err := elf.Open(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		needed, err := f.ImportedLibraries()
		interp := ""
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err == nil {
					interp = strings.TrimRight(string(b), "\x00")
				}
			}
		}
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if interp != "" && !seen[interp] {
			seen[interp] = true
			real, err := filepath.EvalSymlinks(interp)
			if err != nil {
				return nil, fmt.Errorf("loader %s: %w", interp, err)
			}
			entries = append(entries, executable(strings.TrimPrefix(interp, "/"), real))
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			path := ""
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"} {
				if fileExists(filepath.Join(dir, lib)) {
					path = filepath.Join(dir, lib)
					break
				}
			}
			if path == "" {
				return nil, fmt.Errorf("%s needs %s, which is not in the library directories", p, lib)
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return nil, err
			}
			// Everything under one directory in the guest, where LD_LIBRARY_PATH points —
			// but a library that is also a plugin stays one file: Debian keeps it in the
			// plugin directory with links to it, and EAL must not load it a second time
			// under another name (it panics on the second registration).
			if strings.HasPrefix(real, pmdDir+"/") {
				if !seen[real] {
					seen[real] = true
					entries = append(entries, qemutest.File(real[1:], real))
				}
				entries = append(entries, symlink("/lib/x86_64-linux-gnu/"+lib, real))
			} else {
				entries = append(entries, qemutest.File("lib/x86_64-linux-gnu/"+lib, real))
			}
			queue = append(queue, real)
		}
	}
	return entries, nil
}

// symlink is the entry for a symbolic link at the absolute path name to target.
func symlink(name, target string) qemutest.Entry {
	return qemutest.Entry{Name: strings.TrimPrefix(name, "/"), Mode: qemutest.ModeSymlink | 0o777, Link: target}
}

func executable(name, src string) qemutest.Entry {
	e := qemutest.File(name, src)
	e.Mode = qemutest.ModeRegular | 0o755
	return e
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// grepPrefix returns the complete lines of s (a line still being written, without its
// newline, does not count) that start with prefix.
func grepPrefix(s, prefix string) []string {
	var out []string
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		s = ""
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

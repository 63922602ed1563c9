package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// twoSimPorts is two sim ports on their own wires, forwarding to each other.
const twoSimPorts = `ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
`

func TestConfigCommands(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`
ports:
  - {name: a, driver: sim, wire: "pair:a", rx_ring: 100}
  - {name: b, driver: sim, wire: "pair:b"}
  - {name: c, driver: vfio-pci, pci: "0000:03:00.0", rx_rnig: 512}
forward: {mode: reflect}
poll: {mode: sleep, sleep_min: 1ms, sleep_max: 1ms}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("ports: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := filepath.Join("..", "..", "examples", "sim.yaml")
	// A --root whose meminfo has 3 free hugepages: two vfio-pci ports need 20 MiB of them.
	hugeRoot := t.TempDir()
	os.MkdirAll(filepath.Join(hugeRoot, "proc"), 0o755)
	if err := os.WriteFile(filepath.Join(hugeRoot, "proc", "meminfo"), []byte("HugePages_Total: 8\nHugePages_Free: 3\nHugepagesize: 2048 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vfio := "ports:\n  - {name: p0, driver: vfio-pci, pci: \"01:00.0\"}\n  - {name: p1, driver: vfio-pci, pci: \"01:00.1\"}\n"
	example, _, code := runUIOD(t, "", nil, "config", "example")
	if code != 0 || !strings.Contains(example, "# ") {
		t.Fatalf("config example: exit %d, output %q", code, example)
	}

	tests := []struct {
		name      string
		stdin     string
		env       []string
		args      []string
		code      int
		stdout    []string // substrings
		stderr    []string
		stderrNot []string
	}{
		{"good file", "", nil, []string{"config", "validate", sim}, 0, []string{sim + ": ok"}, nil, nil},
		{"example on stdin", example, nil, []string{"config", "validate", "-"}, 0, []string{"<stdin>: ok"}, nil, nil},
		{"bad file names every field", "", nil, []string{"config", "validate", bad}, 2, nil, []string{
			bad + ": ports[0].rx_ring = 100: must be a power of two",
			bad + ": ports[2].rx_rnig: unknown key; did you mean rx_ring?",
			bad + ": poll.sleep_min = 1ms: must be less than poll.sleep_max",
			"uiod: " + bad + ": invalid configuration",
		}, nil},
		{"bad on stdin", "ports: []", nil, []string{"config", "validate", "-"}, 2, nil, []string{"<stdin>: ports: at least one port"}, nil},
		{"syntax error", "", nil, []string{"config", "validate", broken}, 2, nil, []string{broken + ": parse config: yaml"}, nil},
		{"missing file", "", nil, []string{"config", "validate", filepath.Join(dir, "nope.yaml")}, 2, nil, []string{"no such file"}, nil},
		{"several files", "", nil, []string{"config", "validate", sim, bad}, 2, []string{sim + ": ok"}, []string{"1 of 2 configuration files are invalid"}, []string{sim + ": ports"}},
		{"no file", "", nil, []string{"config", "validate"}, 2, nil, []string{"requires at least 1 arg"}, nil},
		{"env override checked", "", []string{"UIOD_POLL_MODE=nap"}, []string{"config", "validate", sim}, 2, nil,
			[]string{sim + `: poll.mode = "nap": want busy, adaptive or sleep (from $UIOD_POLL_MODE)`}, nil},
		{"env override applied", "", []string{"UIOD_POLL_MODE=busy", "UIOD_METRICS_LISTEN="}, []string{"config", "validate", sim}, 0, []string{sim + ": ok"}, nil, nil},
		{"directory is an I/O failure", "", nil, []string{"config", "validate", dir}, 1, nil, []string{dir + ": read config: ", "is a directory", "could not be read"}, nil},
		{"unreadable file among bad ones", "", nil, []string{"config", "validate", bad, dir}, 1, nil, []string{"1 of 2 configuration files could not be read (1 invalid)"}, nil},
		{"second document", twoSimPorts + "---\nlog: {level: debug}\n", nil, []string{"config", "validate", "-"}, 2, nil, []string{"<stdin>: parse config: line 4: a second YAML document"}, nil},
		{"keys differing in case", twoSimPorts + "Log: {level: debug}\nlog: {level: info}\n", nil, []string{"config", "validate", "-"}, 2, nil, []string{`<stdin>: log: keys "Log" (line 4) and "log" (line 5) differ only in case`}, nil},
		{"too large", twoSimPorts + "#" + strings.Repeat("x", 1<<20), nil, []string{"config", "validate", "-"}, 2, nil, []string{"<stdin>: parse config: document is larger than 1048576 bytes"}, nil},
		{"sleep range checked in adaptive mode", "", []string{"UIOD_POLL_SLEEP_MIN=1s"}, []string{"config", "validate", sim}, 2, nil,
			[]string{sim + ": poll.sleep_min = 1s: must be less than poll.sleep_max (200µs) (from $UIOD_POLL_SLEEP_MIN)"}, nil},
		{"run: unreadable config is a failure", "", nil, []string{"run", "--config", dir}, 1, nil, []string{"is a directory"}, nil},
		{"run: invalid config is a usage error", "", nil, []string{"run", "--config", bad}, 2, nil, []string{"must be a power of two"}, nil},
		{"dma limit from the root's hugepages", vfio, nil, []string{"--root", hugeRoot, "config", "validate", "-"}, 2, nil,
			[]string{"<stdin>: memory.dma_limit: the ports need 20MiB of DMA memory (p0 10MiB, p1 10MiB), more than the 6MiB allowed by memory.dma_limit auto: 3 free 2MiB hugepages"}, nil},
		{"dma limit given", vfio + "memory: {dma_limit: 20MiB}\n", nil, []string{"--root", hugeRoot, "config", "validate", "-"}, 0, []string{"<stdin>: ok"}, nil, nil},
		{"capture group unknown", "", []string{"UIOD_CAPTURE_GROUP=uiod-no-such-group"}, []string{"config", "validate", sim}, 2, nil,
			[]string{sim + `: capture.group = "uiod-no-such-group": no such group in /etc/group (create it, e.g. groupadd --system uiod-no-such-group, or give its numeric gid) (from $UIOD_CAPTURE_GROUP)`}, nil},
		{"capture group gid out of range", twoSimPorts + "capture: {group: 4294967295}\n", nil, []string{"config", "validate", "-"}, 2, nil,
			[]string{`<stdin>: capture.group = "4294967295": gid out of range`}, nil},
		{"capture group by name", twoSimPorts + "capture: {group: root}\n", nil, []string{"config", "validate", "-"}, 0, []string{"<stdin>: ok"}, nil, nil},
		{"capture group by gid", twoSimPorts + "capture: {group: 61000}\n", nil, []string{"config", "validate", "-"}, 0, []string{"<stdin>: ok"}, nil, nil},
		{"example takes no args", "", nil, []string{"config", "example", "x"}, 2, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runUIOD(t, tt.stdin, tt.env, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			testutil.TextContains(t, "stdout", stdout, tt.stdout...)
			testutil.TextContains(t, "stderr", stderr, tt.stderr...)
			testutil.TextLacks(t, "stderr", stderr, tt.stderrNot...)
		})
	}
}

// A port of another MTU: validate says what frames it carries and the memory its
// buffers take; an MTU beyond the NIC's is refused naming the NIC's range, exit 2.
func TestConfigValidateMTU(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "jumbo.yaml")
	os.WriteFile(good, []byte(`ports:
  - {name: a, driver: sim, wire: "pair:mtu0", mtu: 9000}
  - {name: b, driver: sim, wire: "pair:mtu1"}
forward: {mode: l2fwd, pairs: [[a, b]]}
`), 0o644)
	cli := &uiodCLI{}
	stdout, stderr, code := cli.run(t, "config", "validate", good)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if want := "port a: mtu 9000: frames of up to 9014 bytes (9018 with a VLAN tag) in 9216-byte buffers, "; !strings.Contains(stdout, want) || strings.Contains(stdout, "port b:") {
		t.Errorf("validate said\n%s\nwant %q for port a only", stdout, want)
	}
	bad := filepath.Join(dir, "toolarge.yaml")
	os.WriteFile(bad, []byte(`ports:
  - {name: a, driver: sim, nic: igb, wire: "pair:mtu0", mtu: 9500}
  - {name: b, driver: sim, wire: "pair:mtu1", mtu: 67}
forward: {mode: l2fwd, pairs: [[a, b]]}
`), 0o644)
	_, stderr, code = cli.run(t, "config", "validate", bad)
	if code != 2 {
		t.Errorf("exit %d, want 2\n%s", code, stderr)
	}
	for _, want := range []string{"ports[0].mtu = 9500: must be in [68, 9190], the 82576 (igb)'s range", "ports[1].mtu = 67: must be in [68, 9710]"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr\n%s\nlacks %q", stderr, want)
		}
	}
}

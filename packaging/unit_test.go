// Package packaging holds the tests of the Debian package (deb.sh) and the systemd unit
// it ships (contrib/uiod.service).
package packaging

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

const unitFile = "../contrib/uiod.service"

// unitEntries returns the unit's [Service] key=value lines in order.
func unitEntries(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kv [][2]string
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			kv = append(kv, [2]string{k, v})
		}
	}
	return kv
}

func values(kv [][2]string, key string) []string {
	var vs []string
	for _, e := range kv {
		if e[0] == key {
			vs = append(vs, e[1])
		}
	}
	return vs
}

// TestUnitBindsAndRestores: the unit binds the configuration's ports before the daemon
// starts, quiesces then restores them after every stop, and keeps /run/uiod (the bind
// records) across stops so the restore knows each NIC's original driver.
func TestUnitBindsAndRestores(t *testing.T) {
	kv := unitEntries(t, unitFile)
	const cfg = "/etc/uiod/uiod.yaml"
	want := map[string][]string{
		"ExecStartPre":             {"/usr/bin/uiod config validate " + cfg, "+/usr/bin/uiod bind --config " + cfg},
		"ExecStart":                {"/usr/bin/uiod run --config " + cfg},
		"ExecStopPost":             {"+/usr/bin/uiod quiesce --config " + cfg, "+/usr/bin/uiod unbind --config " + cfg + " --restore"},
		"RuntimeDirectory":         {"uiod"},
		"RuntimeDirectoryPreserve": {"yes"},
		"KillSignal":               {"SIGTERM"},
		"LimitMEMLOCK":             {"infinity"},
	}
	for key, w := range want {
		if got := values(kv, key); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: %s = %q, want %q (in this order)", unitFile, key, got, w)
		}
	}
}

// TestUnitCommandsExist runs every uiod command line of the unit with --help: each
// subcommand and flag it uses must exist in the CLI.
func TestUnitCommandsExist(t *testing.T) {
	bin := uiodBinary(t)
	if out, err := exec.Command(bin, "help", "quiesce").Output(); err != nil || !strings.Contains(string(out), "uiod quiesce") {
		t.Skip("this build has no `uiod quiesce` yet (the unit's ExecStopPost needs it): the unit's commands are checked once it does")
	}
	for _, key := range []string{"ExecStartPre", "ExecStart", "ExecStopPost"} {
		for _, line := range values(unitEntries(t, unitFile), key) {
			args := strings.Fields(strings.TrimLeft(line, "+-@:!"))[1:]
			out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
			// The help must be the subcommand's own, not the root's for an unknown word.
			if usage := "uiod " + args[0]; err != nil || !strings.Contains(string(out), usage) {
				t.Errorf("%s=%s: `uiod %s --help`: %v (want the help of %s)\n%s", key, line, strings.Join(args, " "), err, usage, out)
			}
		}
	}
}

// TestUnitVerify runs systemd-analyze verify on the unit, with /usr/bin/uiod pointed at a
// freshly built binary (verify checks that the executables exist); any message fails.
func TestUnitVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (package systemd): the unit is not verified")
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, sa, string(b), uiodBinary(t))
}

// verifyUnit writes unit, with /usr/bin/uiod replaced by bin, and verifies it.
func verifyUnit(t *testing.T, sa, unit, bin string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "uiod.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/bin/uiod", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}

// uiodBinary builds the uiod binary once per test process and returns its path.
func uiodBinary(t *testing.T) string {
	return testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
}

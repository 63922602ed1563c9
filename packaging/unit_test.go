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

// The shipped units.
const (
	unitFile     = "../contrib/uiod.service"
	templateFile = "../contrib/uiod@.service"
)

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

// units are the shipped units: uiod.service, and the template uiod@.service with the
// instance name the tests give it.
var units = []struct {
	file, instance string
	env            string // its Environment= line
	envFile        string // its EnvironmentFile= line
	runtimeDir     string
}{
	{unitFile, "", "UIOD_CONFIG=/etc/uiod/uiod.yaml", "-/etc/default/uiod", "uiod"},
	{templateFile, "edge", "UIOD_CONFIG=/etc/uiod/%i.yaml UIOD_STATE_DIR=/run/uiod/%i", "-/etc/default/uiod@%i", "uiod uiod/%i"},
}

// TestUnitBindsAndRestores: each unit validates and binds the configuration ($UIOD_CONFIG,
// which /etc/default/uiod may change, named once) before the daemon starts, runs it as
// Type=notify, reloads it with SIGHUP, quiesces then restores the ports after every stop,
// and keeps /run/uiod (the bind records) across stops so the restore knows each NIC's
// original driver.
func TestUnitBindsAndRestores(t *testing.T) {
	const cfg = "${UIOD_CONFIG}"
	for _, u := range units {
		t.Run(filepath.Base(u.file), func(t *testing.T) {
			kv := unitEntries(t, u.file)
			want := map[string][]string{
				"Type":                     {"notify"},
				"Environment":              {u.env},
				"EnvironmentFile":          {u.envFile},
				"ExecStartPre":             {"/usr/bin/uiod config validate " + cfg, "+/usr/bin/uiod bind --config " + cfg},
				"ExecStart":                {"/usr/bin/uiod run --config " + cfg},
				"ExecReload":               {"/bin/kill -HUP $MAINPID"},
				"ExecStopPost":             {"+/usr/bin/uiod quiesce --config " + cfg, "+/usr/bin/uiod unbind --config " + cfg + " --restore"},
				"RuntimeDirectory":         {u.runtimeDir},
				"RuntimeDirectoryPreserve": {"yes"},
				"KillSignal":               {"SIGTERM"},
				"LimitMEMLOCK":             {"infinity"},
			}
			for key, w := range want {
				if got := values(kv, key); strings.Join(got, "\n") != strings.Join(w, "\n") {
					t.Errorf("%s: %s = %q, want %q (in this order)", u.file, key, got, w)
				}
			}
		})
	}
}

// unitEnv is the environment a unit's Environment= lines give its commands, with the
// instance name for %i.
func unitEnv(kv [][2]string, instance string) map[string]string {
	env := map[string]string{}
	for _, line := range values(kv, "Environment") {
		for _, a := range strings.Fields(strings.ReplaceAll(line, "%i", instance)) {
			k, v, _ := strings.Cut(a, "=")
			env[k] = v
		}
	}
	return env
}

// execArgs returns the words of an Exec line with its prefixes dropped and ${NAME}
// expanded from env, as systemd runs it.
func execArgs(line string, env map[string]string) []string {
	return strings.Fields(os.Expand(strings.TrimLeft(line, "+-@:!"), func(k string) string { return env[k] }))
}

// TestUnitCommandsExist runs every uiod command line of each unit with --help: each
// subcommand and flag it uses must exist in the CLI.
func TestUnitCommandsExist(t *testing.T) {
	bin := uiodBinary(t)
	for _, u := range units {
		kv := unitEntries(t, u.file)
		env := unitEnv(kv, u.instance)
		for _, key := range []string{"ExecStartPre", "ExecStart", "ExecStopPost"} {
			for _, line := range values(kv, key) {
				args := execArgs(line, env)[1:]
				out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
				// The help must be the subcommand's own, not the root's for an unknown word.
				if usage := "uiod " + args[0]; err != nil || !strings.Contains(string(out), usage) {
					t.Errorf("%s: %s=%s: `uiod %s --help`: %v (want the help of %s)\n%s", u.file, key, line, strings.Join(args, " "), err, usage, out)
				}
			}
		}
	}
}

// TestUnitVerify runs systemd-analyze verify on each unit (the template as an instance of
// it), with /usr/bin/uiod pointed at a freshly built binary (verify checks that the
// executables exist); any message fails.
func TestUnitVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (package systemd): the units are not verified")
	}
	for _, u := range units {
		b, err := os.ReadFile(u.file)
		if err != nil {
			t.Fatal(err)
		}
		verifyUnit(t, sa, unitName(u.file, u.instance), string(b), uiodBinary(t))
	}
}

// unitName is the name systemd knows the unit in file by: a template's with instance.
func unitName(file, instance string) string {
	return strings.Replace(filepath.Base(file), "@.", "@"+instance+".", 1)
}

// verifyUnit writes unit as name, with /usr/bin/uiod replaced by bin, and verifies it.
func verifyUnit(t *testing.T, sa, name, unit, bin string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/bin/uiod", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
	}
}

// uiodBinary builds the uiod binary once per test process and returns its path.
func uiodBinary(t *testing.T) string {
	return testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
}

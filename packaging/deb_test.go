package packaging

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebInstall builds the package with deb.sh, installs it with dpkg into an empty
// scratch root and checks that every file lands with its mode, that the binary is static,
// the unit is the shipped one and verifies, /etc/uiod/uiod.yaml is a conffile holding
// `uiod config example` and passes `uiod config validate`, that dpkg verifies the files,
// and that removal keeps the conffile and purge removes it.
func TestDebInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package (a static build and man pages): not with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root installs files owned by root: run as root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "gzip", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	out := t.TempDir()
	build := exec.Command("bash", "deb.sh")
	build.Env = append(os.Environ(), "OUT="+out, "VERSION=1.2.3~test")
	b, err := build.Output()
	if err != nil {
		t.Fatalf("deb.sh: %v\n%s", err, stderrOf(err))
	}
	deb := strings.TrimSpace(string(b))
	if filepath.Dir(deb) != out || !strings.HasPrefix(filepath.Base(deb), "uiod_1.2.3~test_") {
		t.Fatalf("deb.sh printed %q, want a package in %s", deb, out)
	}

	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dpkg := func(args ...string) string {
		t.Helper()
		// The maintainer scripts run outside the scratch root (it has no shell) with
		// DPKG_ROOT set, which makes them leave the host's systemd alone.
		cmd := exec.Command("dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--log=/dev/null"}, args...)...)
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return string(o)
	}
	dpkg("-i", deb)

	files := []struct {
		path string
		mode os.FileMode
	}{
		{"usr/bin/uiod", 0o755},
		{"lib/systemd/system/uiod.service", 0o644},
		{"lib/systemd/system/uiod@.service", 0o644},
		{"etc/uiod/uiod.yaml", 0o644},
		{"etc/default/uiod", 0o644},
		{"usr/share/man/man8/uiod.8.gz", 0o644},
		{"usr/share/man/man8/uiod-run.8.gz", 0o644},
		{"usr/share/man/man8/uiod-status.8.gz", 0o644},
		{"usr/share/man/man8/uiod-config-validate.8.gz", 0o644},
		{"usr/share/man/man5/uiod.yaml.5.gz", 0o644},
		{"usr/share/bash-completion/completions/uiod", 0o644},
		{"usr/share/zsh/vendor-completions/_uiod", 0o644},
		{"usr/share/fish/vendor_completions.d/uiod.fish", 0o644},
		{"usr/share/doc/uiod/grafana/uiod.json", 0o644},
	}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(root, f.path))
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if fi.Mode().Perm() != f.mode || !fi.Mode().IsRegular() {
			t.Errorf("/%s: mode %v, want %v", f.path, fi.Mode(), f.mode)
		}
	}
	bin := filepath.Join(root, "usr/bin/uiod")
	checkStatic(t, bin)
	for _, u := range units {
		installed := filepath.Join(root, "lib/systemd/system", filepath.Base(u.file))
		if want, err := os.ReadFile(u.file); err != nil {
			t.Fatal(err)
		} else if got, _ := os.ReadFile(installed); !bytes.Equal(got, want) {
			t.Errorf("installed unit %s differs from %s", installed, u.file)
		}
		if sa, err := exec.LookPath("systemd-analyze"); err == nil {
			unit, _ := os.ReadFile(installed)
			verifyUnit(t, sa, unitName(u.file, u.instance), string(unit), bin)
		}
	}
	page := gunzip(t, filepath.Join(root, "usr/share/man/man8/uiod-status.8.gz"))
	if !strings.Contains(page, ".TH \"UIOD-STATUS\" \"8\"") || !strings.Contains(page, `\fB--watch\fP`) {
		t.Errorf("uiod-status.8 is not the status man page:\n%.300s", page)
	}
	if c, _ := os.ReadFile(filepath.Join(root, "usr/share/bash-completion/completions/uiod")); !bytes.Contains(c, []byte("__start_uiod")) {
		t.Error("bash completion is not uiod's")
	}

	conf := filepath.Join(root, "etc/uiod/uiod.yaml")
	example, err := exec.Command(bin, "config", "example").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, example) {
		t.Error("/etc/uiod/uiod.yaml is not `uiod config example`")
	}
	if o, err := exec.Command(bin, "config", "validate", conf).CombinedOutput(); err != nil {
		t.Errorf("uiod config validate %s: %v\n%s", conf, err, o)
	}
	status := dpkg("-s", "uiod")
	for _, want := range []string{"Status: install ok installed", "Version: 1.2.3~test", "Conffiles:\n /etc/uiod/uiod.yaml ", "\n /etc/default/uiod "} {
		if !strings.Contains(status, want) {
			t.Errorf("dpkg -s uiod lacks %q:\n%s", want, status)
		}
	}
	if o := dpkg("--verify", "uiod"); o != "" {
		t.Errorf("dpkg --verify uiod: %s", o)
	}

	dpkg("-r", "uiod")
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("after dpkg -r the binary is still there: %v", err)
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("dpkg -r removed the conffile: %v", err)
	}
	dpkg("--purge", "uiod")
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Errorf("after dpkg --purge the conffile is still there: %v", err)
	}
}

// checkStatic fails the test unless path is an ELF executable with no interpreter and
// no shared libraries.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a dynamic loader: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", path, libs)
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

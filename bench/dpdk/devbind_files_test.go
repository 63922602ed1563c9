package dpdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/testrig/qemutest"
)

// Host files dpdk-devbind needs in the guest: the script, the interpreter its first line
// names, lspci (it runs `lspci -Dvmmnnk`) and the database lspci names devices from (libpci
// opens /usr/share/misc/pci.ids after trying pci.ids.gz there).
const (
	devbindScript = "/usr/bin/dpdk-devbind.py"
	devbindPython = "/usr/bin/python3"
	lspciBin      = "/usr/bin/lspci"
	pciIDs        = "/usr/share/misc/pci.ids"
)

// devbindFiles returns the initramfs entries for dpdk-devbind.py under a minimal Python
// (the interpreter, the stdlib modules the script imports, their libraries), lspci with its
// libraries and pci.ids, and uiod.
func devbindFiles(t *testing.T, uiod string) []qemutest.Entry {
	for _, p := range []string{devbindScript, devbindPython, lspciBin, pciIDs} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v (apt-get install dpdk python3 pciutils pci.ids)", p, err)
		}
	}
	python, err := filepath.EvalSymlinks(devbindPython)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := stdlibFiles(python, devbindScript)
	if err != nil {
		t.Fatal(err)
	}
	files := []qemutest.Entry{
		qemutest.Binary("uiod", uiod),
		executable(strings.TrimPrefix(devbindScript, "/"), devbindScript),
		executable(strings.TrimPrefix(python, "/"), python),
		symlink(devbindPython, python),
		executable(strings.TrimPrefix(lspciBin, "/"), lspciBin),
		qemutest.File(strings.TrimPrefix(pciIDs, "/"), pciIDs),
	}
	elfs := []string{python, lspciBin}
	for _, m := range mods {
		files = append(files, qemutest.File(strings.TrimPrefix(m, "/"), m))
		if strings.HasSuffix(m, ".so") {
			elfs = append(elfs, m)
		}
	}
	libs, err := closure(t, elfs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest Python: %s and %d stdlib files (%s)", python, len(mods), strings.Join(mods, " "))
	return append(files, libs...)
}

// stdlibFiles runs script --status under python -S -E -X importtime on the host (it only
// reads sysfs and runs lspci) and returns the files of the modules it imported: sources,
// extension modules, and the sources of the frozen ones (os.py is the landmark by which
// Python finds its stdlib directory). Built-in modules need no file.
func stdlibFiles(python, script string) ([]string, error) {
	var stderr bytes.Buffer
	run := exec.Command(python, "-S", "-E", "-X", "importtime", script, "--status")
	run.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		return nil, fmt.Errorf("%s %s --status: %w\n%s", python, script, err, stderr.Bytes())
	}
	names := importedModules(stderr.String())
	if len(names) == 0 {
		return nil, fmt.Errorf("%s -X importtime %s: no imports reported\n%s", python, script, stderr.Bytes())
	}
	const where = `
import importlib.util, json, sys
files = []
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    if spec is None:
        continue  # a module the script tries and does without (msvcrt)
    if spec.origin == "frozen":
        files.append(getattr(spec.loader_state, "filename", None))
    elif spec.has_location:
        files.append(spec.origin)
print(json.dumps([f for f in files if f]))
`
	out, err := exec.Command(python, append([]string{"-S", "-E", "-c", where}, names...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: locate modules: %w", python, err)
	}
	var files []string
	if err := json.Unmarshal(out, &files); err != nil {
		return nil, fmt.Errorf("%s: locate modules: %w", python, err)
	}
	return files, nil
}

// importedModules returns the module names of python -X importtime's report, in import
// order: the last column of each "import time:" line but the header.
func importedModules(report string) []string {
	var names []string
	for _, l := range strings.Split(report, "\n") {
		rest, ok := strings.CutPrefix(l, "import time:")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '|')
		if i < 0 {
			continue
		}
		name := strings.TrimSpace(rest[i+1:])
		if name == "" || name == "imported package" {
			continue
		}
		names = append(names, name)
	}
	return names
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/testrig/qemutest"
)

// binaries are the static binaries every guest gets, built once per test binary run.
var binaries struct {
	once       sync.Once
	dir        string
	uiod, test string
	failed     bool
}

// TestMain removes the built binaries when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// guestFiles builds (once) the static uiod binary and the guest test binary and returns the
// initramfs entries that install them as /bin/uiod and /bin/guest.test, and the host's
// pci.ids if it has one.
func guestFiles(t *testing.T) []qemutest.Entry {
	t.Helper()
	binaries.once.Do(func() {
		binaries.failed = true
		b := &builder{TB: t}
		defer func() { binaries.dir = b.dir }()
		binaries.uiod = qemutest.BuildUIOD(b)
		binaries.test = qemutest.BuildTest(b, "./integration/guest")
		binaries.failed = false
	})
	if binaries.failed {
		t.Fatal("building the guest binaries failed (see the first test that tried)")
	}
	files := []qemutest.Entry{
		qemutest.Binary("uiod", binaries.uiod),
		qemutest.Binary("guest.test", binaries.test),
	}
	// The host's PCI name database, where it has one, so the guest's uiod shows names.
	for _, p := range []string{"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"} {
		if _, err := os.Stat(p); err == nil {
			files = append(files, qemutest.File(p[1:], p))
			break
		}
	}
	return files
}

// builder is a testing.TB whose TempDir outlives the test, so binaries built in the first
// guest test serve the others (TestMain removes the directory).
type builder struct {
	testing.TB
	dir string
}

func (b *builder) TempDir() string {
	if b.dir == "" {
		d, err := os.MkdirTemp("", "uiod-guest-bin-")
		if err != nil {
			b.Fatal(err)
		}
		b.dir = d
	}
	return b.dir
}

// guestTestScript is a guest script that runs the guest tests matching run (a -test.run
// pattern) within timeout, with the environment variable env (if not "") set to 1 to
// enable the tests that need it. The loopback is up first, for a daemon's /status.
func guestTestScript(env, run string, timeout time.Duration) string {
	s := ". /etc/uiod/lib.sh\nloopback_up\nuiod version 2>&1 | head -1\n"
	if env != "" {
		s += "export " + env + "=1\n"
	}
	return s + fmt.Sprintf("exec guest.test -test.v -test.count=1 -test.timeout=%v -test.run '%s'\n", timeout, run)
}

// testdataScript returns the guest script testdata/name.
func testdataScript(t *testing.T, name string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(script)
}

// startGuest boots a guest on the kernel that kernel returns, with o plus the guest
// binaries. It skips t where that kernel, QEMU or root is missing.
func startGuest(t *testing.T, kernel func() (qemutest.Kernel, error), o qemutest.Options) *qemutest.VM {
	t.Helper()
	k, err := kernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	o.Kernel = k
	o.Files = append(o.Files, guestFiles(t)...)
	return qemutest.Start(t, o)
}

// finishGuest waits for a guest running guest tests (see qemutest.VM.Finish) and reports
// each as a subtest of t.
func finishGuest(t *testing.T, vm *qemutest.VM) *qemutest.Result {
	t.Helper()
	r := vm.Finish(t)
	r.Report(t)
	return r
}

// runGuest boots a guest with o plus the guest binaries and runs every guest test, bind
// tests first and unbind last (see package guest), each reported as a subtest of t.
func runGuest(t *testing.T, kernel func() (qemutest.Kernel, error), o qemutest.Options) {
	o.Script = guestTestScript("", "^TestGuest", 4*time.Minute)
	o.HugePages = 16
	o.Timeout = 5 * time.Minute
	finishGuest(t, startGuest(t, kernel, o))
}

// TestIntegrationDebianIOMMU runs the guest tests on Debian's kernel (drivers as modules)
// with an emulated Intel IOMMU: vfio type1 and uio_pci_generic.
func TestIntegrationDebianIOMMU(t *testing.T) {
	runGuest(t, qemutest.DebianKernel, qemutest.Options{IOMMU: true})
}

// TestIntegrationSharedIOMMU runs the guest tests on the shared kernel (drivers built in)
// with an emulated Intel IOMMU: vfio type1, the vfio cdev + iommufd path, uio_pci_generic.
func TestIntegrationSharedIOMMU(t *testing.T) {
	runGuest(t, qemutest.SharedKernel, qemutest.Options{IOMMU: true})
}

// TestIntegrationSharedNoIOMMU runs the guest tests on the shared kernel without an IOMMU,
// vfio in unsafe no-IOMMU mode.
func TestIntegrationSharedNoIOMMU(t *testing.T) {
	runGuest(t, qemutest.SharedKernel, qemutest.Options{UnsafeNoIOMMU: true})
}

package integration

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
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

// guestScript runs the guest tests, bind tests first and unbind last (see package guest).
const guestScript = `uiod version 2>&1 | head -1
exec guest.test -test.v -test.count=1 -test.timeout=4m -test.run '^TestGuest'
`

// runGuest boots a guest with o plus the guest binaries and script, reports each guest
// test as a subtest of t, and logs the times.
func runGuest(t *testing.T, o qemutest.Options) {
	qemutest.Require(t)
	o.Files = append(o.Files, guestFiles(t)...)
	o.Script = guestScript
	o.HugePages = 16
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	r := qemutest.Run(t, o)
	t.Logf("%s: boot %v, guest tests %v, QEMU start to power-off %v",
		r.Kernel, r.Boot.Round(time.Millisecond), r.Script.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
	r.Report(t)
	if t.Failed() {
		t.Logf("guest console:\n%s", r.Console)
	}
}

// TestIntegrationDebianIOMMU runs the guest tests on Debian's kernel (drivers as modules)
// with an emulated Intel IOMMU: vfio type1 and uio_pci_generic.
func TestIntegrationDebianIOMMU(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	runGuest(t, qemutest.Options{Kernel: k, IOMMU: true})
}

// TestIntegrationSharedIOMMU runs the guest tests on the shared kernel (drivers built in)
// with an emulated Intel IOMMU: vfio type1, the vfio cdev + iommufd path, uio_pci_generic.
func TestIntegrationSharedIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runGuest(t, qemutest.Options{Kernel: k, IOMMU: true})
}

// TestIntegrationSharedNoIOMMU runs the guest tests on the shared kernel without an IOMMU,
// vfio in unsafe no-IOMMU mode.
func TestIntegrationSharedNoIOMMU(t *testing.T) {
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip(err)
	}
	runGuest(t, qemutest.Options{Kernel: k, UnsafeNoIOMMU: true})
}

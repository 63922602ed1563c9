package guest

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/vfio"
)

// The device checks the vfio and uio guest tests share: identity and BARs, DMA through the
// device, and interrupts fired through the NIC's own cause registers.

// irqTimeout bounds each wait for an interrupt; TCG is slow but not this slow.
const irqTimeout = 10 * time.Second

// bindForDeviceTest makes sure the guest NIC addr is bound to driver, binding it through
// sysfs (driver_override + drivers_probe) if TestGuestBind did not, so that the device
// tests can also run alone.
func bindForDeviceTest(t *testing.T, addr, driver string) {
	t.Helper()
	if driverOf(t, addr) == driver {
		return
	}
	dev := filepath.Join("/sys/bus/pci/devices", addr)
	write := func(p, v string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(v), 0o200); err != nil {
			t.Fatalf("bind %s to %s: write %q to %s: %v", addr, driver, v, p, err)
		}
	}
	if driverOf(t, addr) != "" {
		write(filepath.Join(dev, "driver/unbind"), addr)
	}
	write(filepath.Join(dev, "driver_override"), driver)
	write("/sys/bus/pci/drivers_probe", addr)
	if d := driverOf(t, addr); d != driver {
		t.Fatalf("%s is on driver %q after binding it to %s", addr, d, driver)
	}
	t.Logf("bound %s to %s through sysfs", addr, driver)
}

// openVFIO binds the guest NIC addr to vfio-pci (bindForDeviceTest) and opens it.
func openVFIO(t *testing.T, addr string) *vfio.Device {
	t.Helper()
	bindForDeviceTest(t, addr, "vfio-pci")
	dev, err := vfio.Open(pci.MustParseAddr(addr), vfio.Options{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

// waitReadable waits until fd is readable or the timeout passes.
func waitReadable(t *testing.T, fd int, timeout time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		return n > 0 && fds[0].Revents&unix.POLLIN != 0
	}
}

// checkIdentity checks that config space and BAR0 reach the igb NIC.
func checkIdentity(t *testing.T, d pci.Device) pci.Region {
	t.Helper()
	vid, err := pci.ReadConfig16(d.Config(), pci.CfgVendorID)
	if err != nil {
		t.Fatal(err)
	}
	did, err := pci.ReadConfig16(d.Config(), pci.CfgDeviceID)
	if err != nil {
		t.Fatal(err)
	}
	if vid != intelnic.VendorIntel || did != i82576.DeviceID {
		t.Fatalf("config space says %04x:%04x, want %04x:%04x", vid, did, intelnic.VendorIntel, i82576.DeviceID)
	}
	cmd, err := pci.ReadConfig16(d.Config(), pci.CfgCommand)
	if err != nil {
		t.Fatal(err)
	}
	if cmd&(pci.CmdMemory|pci.CmdBusMaster) != pci.CmdMemory|pci.CmdBusMaster {
		t.Errorf("command register %#04x: memory decoding and bus mastering should be on after Open", cmd)
	}
	bar0, err := d.Region(0)
	if err != nil {
		t.Fatal(err)
	}
	if bar0.Len() < 0x20000 {
		t.Errorf("BAR0 is %#x bytes, want at least 128 KiB", bar0.Len())
	}
	status := bar0.Read32(intelnic.STATUS)
	t.Logf("STATUS = %#08x (link up: %v)", status, status&2 != 0)
	if status == 0xFFFFFFFF {
		t.Fatal("STATUS reads all ones: BAR0 does not reach the device")
	}
	// A plain read/write register proves the mapping goes both ways.
	bar0.Write32(intelnic.RAL0, 0x12345678)
	if got := bar0.Read32(intelnic.RAL0); got != 0x12345678 {
		t.Errorf("RAL0 reads %#x after writing 0x12345678", got)
	}
	return bar0
}

// checkOtherBARs reads the MSI-X BAR and, through VFIO, the I/O port BAR, whose
// IOADDR/IODATA window (offsets 0 and 4) gives indirect access to the registers.
func checkOtherBARs(t *testing.T, d pci.Device, bar0 pci.Region) {
	t.Helper()
	bar3, err := d.Region(3)
	if err != nil {
		t.Errorf("Region(3) (MSI-X table): %v", err)
	} else if bar3.Len() < 0x4000 {
		t.Errorf("BAR3 is %#x bytes", bar3.Len())
	}
	if _, ok := d.(*vfio.Device); !ok {
		return
	}
	io, err := d.Region(2)
	if err != nil {
		t.Errorf("Region(2) (I/O ports): %v", err)
		return
	}
	io.Write32(0, intelnic.RAL0)
	io.Write32(4, 0x0badcafe)
	if got := bar0.Read32(intelnic.RAL0); got != 0x0badcafe {
		t.Errorf("RAL0 = %#x after writing 0x0badcafe through the I/O BAR", got)
	}
	io.Write32(0, intelnic.STATUS)
	if got, want := io.Read32(4), bar0.Read32(intelnic.STATUS); got != want {
		t.Errorf("STATUS through the I/O BAR = %#x, through BAR0 %#x", got, want)
	}
}

// freeHugePages returns HugePages_Free from /proc/meminfo.
func freeHugePages(t *testing.T) int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "HugePages_Free:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// checkDMA allocates, inspects and frees DMA memory. With physical addresses (uio,
// no-IOMMU) an allocation beyond one 2 MiB hugepage needs physically consecutive
// hugepages, which the allocator assembles from the pool; with enough free hugepages it
// must succeed, else it must refuse with ErrNotContiguous rather than scatter.
func checkDMA(t *testing.T, dma pci.DMA, physical bool) {
	t.Helper()
	for _, size := range []int{64, 4096, 64 << 10, 2 << 20, 6 << 20} {
		m, err := dma.Alloc(size)
		if physical && size > dmamem.HugePageSize && errors.Is(err, dmamem.ErrNotContiguous) && freeHugePages(t) < 8 {
			t.Logf("Alloc(%d) refused with few free hugepages: %v", size, err)
			continue
		}
		if err != nil {
			t.Errorf("Alloc(%d): %v", size, err)
			continue
		}
		if len(m.Bytes) != size || m.IOVA == 0 || m.IOVA%4096 != 0 {
			t.Errorf("Alloc(%d): %d bytes at bus address %#x", size, len(m.Bytes), m.IOVA)
		}
		m.Bytes[0], m.Bytes[size-1] = 1, 2
		t.Logf("Alloc(%d): bus address %#x", size, m.IOVA)
		if err := dma.Free(m); err != nil {
			t.Errorf("Free(%d): %v", size, err)
		}
	}
}

// checkPhysical allocates a page of dma and checks its bus address is the physical
// address pagemap reports for it (uio and no-IOMMU VFIO hand out physical addresses).
func checkPhysical(t *testing.T, dma pci.DMA) {
	t.Helper()
	m, err := dma.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer dma.Free(m)
	pm, err := dmamem.OpenPagemap("/")
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	if phys, err := pm.Phys(dmamem.VirtAddr(m.Bytes), len(m.Bytes)); err != nil || phys != m.IOVA {
		t.Errorf("bus address %#x, pagemap says %#x (%v)", m.IOVA, phys, err)
	}
}

// checkDeviceDMA makes the NIC read a TX descriptor and a frame from DMA memory and write
// the descriptor back: proof that the bus addresses DMA() returns are the ones the device
// reaches (through the IOMMU, or physically).
func checkDeviceDMA(t *testing.T, d pci.Device, bar0 pci.Region) {
	t.Helper()
	ring, err := d.DMA().Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DMA().Free(ring)
	buf, err := d.DMA().Alloc(2048)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DMA().Free(buf)
	const frameLen = 60
	frame := buf.Bytes[:frameLen]
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0, 0x12, 0x34, 0x56, 0x88, 0xb5})
	copy(frame[14:], "uiod device DMA check")
	le := binary.LittleEndian
	le.PutUint64(ring.Bytes[0:], buf.IOVA)
	le.PutUint32(ring.Bytes[8:], frameLen|intelnic.TxdDTYPData|intelnic.TxdDEXT|intelnic.TxdRS|intelnic.TxdIFCS|intelnic.TxdEOP)
	le.PutUint32(ring.Bytes[12:], frameLen<<14)

	bar0.Write32(i82576.TCTL, 0)
	bar0.Write32(i82576.TXDCTL(0), 0)
	bar0.Write32(i82576.TDBAL(0), uint32(ring.IOVA))
	bar0.Write32(i82576.TDBAL(0)+intelnic.QBAH, uint32(ring.IOVA>>32))
	bar0.Write32(i82576.TDBAL(0)+intelnic.QLEN, 8*16)
	bar0.Write32(i82576.TDBAL(0)+intelnic.QH, 0)
	bar0.Write32(i82576.TDBAL(0)+intelnic.QT, 0)
	bar0.Write32(i82576.TXDCTL(0), intelnic.DctlEnable)
	bar0.Write32(i82576.TCTL, i82576.TctlEN)
	bar0.Write32(i82576.TDBAL(0)+intelnic.QT, 1)
	defer func() {
		bar0.Write32(i82576.TCTL, 0)
		bar0.Write32(i82576.TXDCTL(0), 0)
	}()
	deadline := time.Now().Add(irqTimeout)
	for {
		// Write-back format: status (DD = bit 0) in the last 32-bit word. The register
		// read and the sleep in each round keep the compiler from caching the load.
		if bar0.Read32(i82576.TDBAL(0)+intelnic.QH) == 1 && le.Uint32(ring.Bytes[12:16])&1 != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("TX descriptor at bus address %#x not written back within %v (TDH %d)", ring.IOVA, irqTimeout, bar0.Read32(i82576.TDBAL(0)+intelnic.QH))
		}
		time.Sleep(time.Millisecond)
	}
	if h := bar0.Read32(i82576.TDBAL(0) + intelnic.QH); h != 1 {
		t.Errorf("TDH = %d after one descriptor, want 1", h)
	}
	t.Logf("device read descriptor at %#x and frame at %#x and wrote the descriptor back", ring.IOVA, buf.IOVA)
}

// fireMSIX raises vector v of an igb in MSI-X mode through EICS and checks that exactly
// its eventfd fires. QEMU's igb signals only a newly raised EICR&EIMS bit, so the bit is
// cleared in EICR first.
func fireMSIX(t *testing.T, bar0 pci.Region, vs []*irq.Vector, v int) {
	t.Helper()
	bit := uint32(1) << v
	bar0.Write32(i82576.EICR, bit)
	for _, x := range vs {
		x.Drain()
	}
	bar0.Write32(i82576.EICS, bit)
	if !waitReadable(t, vs[v].Fd(), irqTimeout) {
		t.Fatalf("MSI-X vector %d did not fire within %v of the EICS write", v, irqTimeout)
	}
	if n, err := vs[v].Drain(); err != nil || n == 0 {
		t.Errorf("vector %d: Drain = %d, %v", v, n, err)
	}
	t.Logf("MSI-X vector %d of %d fired", v, len(vs))
	for i, x := range vs {
		if i == v {
			continue
		}
		if n, _ := x.Drain(); n != 0 {
			t.Errorf("vector %d fired %d times when only %d was raised", i, n, v)
		}
	}
	if err := vs[v].Rearm(); err != nil {
		t.Errorf("Rearm of an MSI-X vector: %v", err)
	}
}

// fireINTx raises the legacy LSC cause through ICS (MSI-X mode off) and waits for the
// vector; then acknowledges the cause by reading ICR and rearms.
func fireINTx(t *testing.T, bar0 pci.Region, v *irq.Vector) {
	t.Helper()
	bar0.Write32(i82576.IMC, 0xFFFFFFFF)
	bar0.Read32(i82576.ICR)
	v.Drain()
	if err := v.Rearm(); err != nil {
		t.Fatalf("Rearm: %v", err)
	}
	bar0.Write32(i82576.IMS, i82576.IcrLSC)
	bar0.Write32(i82576.ICS, i82576.IcrLSC)
	if !waitReadable(t, v.Fd(), irqTimeout) {
		t.Fatalf("INTx did not fire within %v of the ICS write", irqTimeout)
	}
	if n, err := v.Drain(); err != nil || n == 0 {
		t.Errorf("INTx: Drain = %d, %v", n, err)
	}
	t.Log("INTx fired")
	if icr := bar0.Read32(i82576.ICR); icr&i82576.IcrLSC == 0 { // also acknowledges the cause
		t.Errorf("ICR = %#x, want LSC set", icr)
	}
	bar0.Write32(i82576.IMC, 0xFFFFFFFF)
	if err := v.Rearm(); err != nil {
		t.Errorf("Rearm: %v", err)
	}
}

package virtio

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestAccessPlatform opens devices with and without VIRTIO_F_ACCESS_PLATFORM on address
// spaces of IOVAs (VFIO type1, iommufd) and of physical addresses (uio, VFIO no-IOMMU). A
// device without the feature bypasses the IOMMU: behind a translating one the driver must
// refuse it and say what to change; with physical addresses it must work.
func TestAccessPlatform(t *testing.T) {
	tests := []struct {
		name     string
		noAccess bool
		physical bool
		want     string // open error, "" to open and forward
	}{
		{"offered, iova", false, false, ""},
		{"offered, physical", false, true, ""},
		{"not offered, iova", true, false, "iommu_platform=on"},
		{"not offered, physical", true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iommu := sim.NewIOMMU()
			if tt.physical {
				iommu = sim.NewPhysicalIOMMU()
			}
			if pci.PhysicalAddresses(iommu) != tt.physical {
				t.Fatalf("PhysicalAddresses %v, want %v", pci.PhysicalAddresses(iommu), tt.physical)
			}
			mc := simvirtio.Config{NoAccessPlatform: tt.noAccess, IOMMU: iommu, Strict: true}
			if tt.want != "" {
				m, err := simvirtio.New(mc)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				_, err = Open(m.PCI(), nic.Config{Interrupts: nic.IRQNone})
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "no-IOMMU") || !errors.Is(err, pci.ErrNotSupported) {
					t.Fatalf("open: %v, want ErrNotSupported naming %q and no-IOMMU mode", err, tt.want)
				}
				if err := m.Device().Err(); err != nil {
					t.Fatalf("model after the refused open: %v", err)
				}
				return
			}
			h := nictest.NewOn(t, driverWith(simvirtio.Config{NoAccessPlatform: tt.noAccess}, Options{}), nic.Config{Interrupts: nic.IRQNone}, nictest.ModelConfig{IOMMU: iommu})
			p := h.Port.(testPort).Port
			if got, want := p.has(virtiospec.FeatAccessPlat), !tt.noAccess; got != want {
				t.Errorf("ACCESS_PLATFORM negotiated %v, want %v", got, want)
			}
			forwardBack(t, h, p, 5)
		})
	}
}

// forwardBack sends n frames to the port, receives them and sends them back out, and
// checks that the peer got them.
func forwardBack(t *testing.T, h *nictest.Harness, p *Port, n int) {
	t.Helper()
	h.Received()
	h.Send(n)
	bufs := make([]*nic.Buf, n)
	got := 0
	if !testutil.Eventually(t, 5*time.Second, func() bool { got += p.RxBurst(0, bufs[got:]); return got == n },
		"received %d of %d (model %+v)", got, n, h.Virtio().Stats()) {
		t.FailNow()
	}
	if sent := p.TxBurst(0, bufs); sent != n {
		t.Fatalf("TxBurst took %d of %d", sent, n)
	}
	back := 0
	testutil.Eventually(t, 5*time.Second, func() bool { back += len(h.Received()); return back == n },
		"peer got %d of %d back (model %+v)", back, n, h.Virtio().Stats())
	if err := h.Dev.Err(); err != nil && !h.FaultsOK {
		t.Fatalf("model: %v", err)
	}
}

// TestZeroLengthTx hands TxBurst a zero-length buffer between two frames: it must be
// dropped and counted, never posted (QEMU marks the device broken on a zero-length
// descriptor, as the model does), and the frames around it sent.
func TestZeroLengthTx(t *testing.T) {
	for _, m := range eventModes {
		t.Run(m.name, func(t *testing.T) {
			h, p := openTest(t, m.mc, nic.Config{Interrupts: nic.IRQNone}, m.opt)
			h.Send(3)
			bufs := make([]*nic.Buf, 3)
			got := 0
			if !testutil.Eventually(t, 5*time.Second, func() bool { got += p.RxBurst(0, bufs[got:]); return got == 3 }, "received %d of 3", got) {
				t.FailNow()
			}
			bufs[1].SetLen(0)
			if n := p.TxBurst(0, bufs); n != 3 {
				t.Fatalf("TxBurst took %d of 3", n)
			}
			vm := h.Virtio()
			testutil.Eventually(t, 5*time.Second, func() bool { return vm.Stats().WireOut == 2 }, "model sent %d of 2", vm.Stats().WireOut)
			if st := p.Stats(); st.TxErrors != 1 || st.TxPackets != 2 {
				t.Errorf("stats %+v, want 2 frames sent and 1 error", st)
			}
			if st := vm.Stats(); st.NeedsReset != 0 || st.TxErrors != 0 {
				t.Errorf("model %+v: the device saw the zero-length buffer", st)
			}
			p.TxBurst(0, nil) // reclaims the two sent
		})
	}
}

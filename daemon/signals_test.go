package daemon

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/wire"
)

// 82599 registers the quiesce check reads straight from the model's register file.
const (
	regRXDCTL0  = 0x01028
	regTXDCTL0  = 0x06028
	regEIMS     = 0x00880
	xdctlEnable = 1 << 25
)

// TestShutdownSignalsQuiesce raises each of ShutdownSignals on the test process while a
// sim daemon forwards traffic, and checks that the signal is caught (not the default
// action: exit for SIGHUP, a goroutine dump for SIGQUIT) and that the shutdown it triggers
// leaves every modelled NIC quiesced: RX and TX queues disabled and interrupts masked by
// the driver, bus mastering off, the device closed, its DMA memory unmapped, and no
// register access or DMA after close.
func TestShutdownSignalsQuiesce(t *testing.T) {
	for _, sig := range ShutdownSignals {
		t.Run(sig.String(), func(t *testing.T) {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, ShutdownSignals...)
			defer signal.Stop(sigs)

			name := "dsig" + sig.String()
			d, _ := startDaemon(t, simConfig(t, name, "adaptive", ""))
			var devs []*sim.Device
			for _, p := range d.ports {
				devs = append(devs, p.model.Device())
			}
			gen, err := wire.Open("pair:" + name + "0")
			if err != nil {
				t.Fatal(err)
			}
			var i uint32
			stop := hammer(1, func() bool { // traffic until the daemon closes its end
				i++
				if gen.Send(frame(i-1)) == wire.ErrClosed {
					return false
				}
				time.Sleep(50 * time.Microsecond)
				return true
			})
			testutil.Eventually(t, 10*time.Second, func() bool {
				st := d.Status()
				return len(st.Queues) > 0 && st.Queues[0].RxPackets > 0
			}, "no frame forwarded before the signal")

			if err := syscall.Kill(os.Getpid(), sig.(syscall.Signal)); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-sigs:
				if got != sig {
					t.Fatalf("caught %v, want %v", got, sig)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%v not delivered to the shutdown channel", sig)
			}
			if err := d.Stop(); err != nil {
				t.Fatalf("Stop after %v: %v", sig, err)
			}
			stop()
			for i, dev := range devs {
				checkQuiesced(t, d.cfg.Ports[i].Name, dev)
			}
		})
	}
}

// checkQuiesced fails the test unless dev was shut down in order.
func checkQuiesced(t *testing.T, port string, dev *sim.Device) {
	t.Helper()
	dev.Lock()
	rx, tx, eims, closed := dev.Get(regRXDCTL0), dev.Get(regTXDCTL0), dev.Get(regEIMS), dev.Closed()
	dev.Unlock()
	cmd, err := pci.ReadConfig16(dev.Config(), pci.CfgCommand)
	if err != nil {
		t.Fatal(err)
	}
	if rx&xdctlEnable != 0 || tx&xdctlEnable != 0 {
		t.Errorf("port %s: queues still enabled: RXDCTL0 %#x TXDCTL0 %#x", port, rx, tx)
	}
	if eims != 0 {
		t.Errorf("port %s: interrupts unmasked: EIMS %#x", port, eims)
	}
	if cmd&pci.CmdBusMaster != 0 {
		t.Errorf("port %s: bus mastering on: command %#x", port, cmd)
	}
	if !closed {
		t.Errorf("port %s: device not closed", port)
	}
	if n := dev.IOMMU().Mappings(); n != 0 {
		t.Errorf("port %s: %d DMA mappings left", port, n)
	}
	faults, _ := dev.Faults()
	for _, f := range faults {
		if f.Kind == sim.AccessAfterClose || f.Kind == sim.DMAFault {
			t.Errorf("port %s: %v", port, f)
		}
	}
}

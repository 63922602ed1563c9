package daemon

import (
	"cmp"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/tap"
	"github.com/uiod/uiod/nic/virtio"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/simnic"
	"github.com/uiod/uiod/uio"
	"github.com/uiod/uiod/vfio"
	"github.com/uiod/uiod/wire"
)

// port is one opened port: the driver's nic.Port and what is behind it.
type port struct {
	cfg  config.Port
	addr pci.Addr
	nic  nic.Port
	// nicName is the NIC driver that opened it (ixgbe, igb, virtio), also for nic: auto.
	nicName string
	model   sim.Model // sim ports only
	wire    wire.Port // sim ports only
	kernel  *tap.Port // the kernel exception path, or nil
	// dev is the opened function; live is set when the kernel may take it back
	// (removal.go): then nic is live, and dev and model change when it comes back.
	dev  pci.Device
	live *livePort
}

// backends holds the shared DMA address spaces: every vfio port joins one container and
// every sim port one model IOMMU, so l2fwd between them moves buffers without copying.
type backends struct {
	root     string
	vfioMode vfio.Mode
	log      *zap.Logger
	vfio     *vfio.Container
	simIOMMU *sim.IOMMU
	uioDMA   *uio.DMA // physical addresses, shared by every uio port
}

// openPort opens p through its backend and brings it up with its NIC driver. On error
// nothing it opened stays open.
func (b *backends) openPort(p config.Port) (_ *port, err error) { return b.openPortOn(p, nil) }

// openPortOn is openPort; a sim port whose wire is given (a model re-made after its
// removal) is cabled to it, which stays open on error.
func (b *backends) openPortOn(p config.Port, reuse wire.Port) (*port, error) {
	if p.Driver == config.DriverVhostUser {
		return b.openVhost(p)
	}
	if p.Driver == config.DriverAFXDP {
		return b.openAFXDP(p)
	}
	addr, err := pci.ParseAddr(p.PCI)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	var id nic.DeviceID // from sysfs; for a sim port, nic reads it from the model
	if p.Driver != config.DriverSim {
		if id, err = b.checkNIC(p, addr); err != nil {
			return nil, err
		}
	}
	op := &port{cfg: p, addr: addr}
	if op.dev, err = b.openFunction(op, reuse); err != nil {
		return nil, err
	}
	var d nic.Driver
	op.nic, d, err = nic.OpenDriver(op.dev, id, p.NIC, nicConfig(p))
	if err != nil {
		op.dev.Close()
		if op.model != nil {
			op.model.Close()
			closeUnlessReused(op.wire, reuse)
		}
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	op.nicName = d.Name
	b.log.Info("nic driver", zap.String("port", p.Name), zap.String("nic", op.nicName))
	return op, nil
}

// openFunction opens op's PCI function through the backend its driver names: a device
// model on its wire (reuse, when given) for sim, or the host's function through vfio-pci
// or uio_pci_generic. A sim port's model and wire are set in op.
func (b *backends) openFunction(op *port, reuse wire.Port) (pci.Device, error) {
	p := op.cfg
	switch p.Driver {
	case config.DriverSim:
		return b.openModel(op, reuse)
	case config.DriverVFIO:
		if b.vfio == nil {
			c, err := vfio.NewContainer(vfio.Options{Root: b.root, Mode: b.vfioMode, Log: b.log.Named("vfio")})
			if err != nil {
				return nil, fmt.Errorf("port %s: %w", p.Name, err)
			}
			b.vfio = c
		}
		d, err := b.vfio.Open(op.addr)
		if err != nil {
			return nil, fmt.Errorf("port %s: open %s with vfio-pci: %w", p.Name, op.addr, err)
		}
		b.log.Info("vfio", zap.String("port", p.Name), zap.Stringer("interface", b.vfio.Mode()), zap.Bool("noiommu", b.vfio.NoIOMMU()))
		return d, nil
	case config.DriverUIO:
		if b.uioDMA == nil {
			a, err := uio.NewDMA(b.root, dmamem.HugeAuto, b.log.Named("uio"))
			if err != nil {
				return nil, fmt.Errorf("port %s: DMA memory for uio: %w", p.Name, err)
			}
			b.uioDMA = a
		}
		d, err := uio.Open(op.addr, uio.Options{Root: b.root, DMA: b.uioDMA, Log: b.log.Named("uio")})
		if err != nil {
			return nil, fmt.Errorf("port %s: open %s with uio_pci_generic: %w", p.Name, op.addr, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("port %s: unknown driver %q", p.Name, p.Driver)
}

// openModel builds a sim port's device model on its wire (reuse, when given, which stays
// open on error) and returns the function its driver opens.
func (b *backends) openModel(op *port, reuse wire.Port) (pci.Device, error) {
	p := op.cfg
	if b.simIOMMU == nil {
		b.simIOMMU = sim.NewIOMMU()
	}
	w := reuse
	if w == nil {
		var err error
		if w, err = openWire(p.Wire); err != nil {
			return nil, fmt.Errorf("port %s: wire %s: %w", p.Name, p.Wire, err)
		}
	}
	m, err := simnic.New(modelName(p.NIC), simnic.Config{Addr: op.addr, Wire: w, IOMMU: b.simIOMMU, MTU: p.PortMTU(), Log: b.log.Named("sim." + p.Name)})
	if err != nil {
		closeUnlessReused(w, reuse)
		return nil, fmt.Errorf("port %s: device model: %w", p.Name, err)
	}
	op.model, op.wire = m, w
	return m.PCI(), nil
}

// modelName is the device model a sim port whose nic is name runs on: the one that NIC
// driver drives, and the 82599 for auto. An igbvf port's PF has its MAC anti-spoof check
// off (simnic.Config.AntiSpoof) so that l2fwd may send frames with their senders'
// addresses.
func modelName(name string) string {
	if name == config.NICAuto || name == "" {
		return simnic.Ixgbe
	}
	return name
}

// nicConfig is the NIC driver configuration of port p.
func nicConfig(p config.Port) nic.Config {
	ncfg := nic.Config{
		RxQueues:    p.RxQueues,
		TxQueues:    p.TxQueues,
		RxRing:      p.RxRing,
		TxRing:      p.TxRing,
		MTU:         p.MTU,
		ITR:         p.ITR,
		Promiscuous: p.Promiscuous,
	}
	switch {
	case p.Interrupts == config.InterruptsMSIX:
		ncfg.Interrupts = nic.IRQMSIX
	case p.Interrupts == config.InterruptsINTx || (p.Interrupts == "" && p.Driver == config.DriverUIO):
		ncfg.Interrupts = nic.IRQINTx
	}
	return ncfg
}

// close closes the port's kernel path, stops the port (queues off, interrupts masked, bus
// mastering off, DMA freed), then the model and its wire.
func (p *port) close() error {
	var err error
	if p.kernel != nil {
		err = p.kernel.Close()
	}
	err = errors.Join(err, p.nic.Close())
	if p.model != nil {
		err = errors.Join(err, p.model.Close())
	}
	if p.wire != nil {
		err = errors.Join(err, p.wire.Close())
	}
	return err
}

// close releases the shared address spaces; every port using them is closed already.
func (b *backends) close() error {
	var err error
	if b.vfio != nil {
		err = b.vfio.Close()
		b.vfio = nil
	}
	if b.uioDMA != nil {
		err = errors.Join(err, b.uioDMA.Close())
		b.uioDMA = nil
	}
	return err
}

// openWire opens a sim port's cable.
func openWire(w config.Wire) (wire.Port, error) {
	if w.Kind == "" {
		return nil, errors.New("sim port needs a wire")
	}
	return w.Spec.Open()
}

// vfioMode maps vfio.interface onto the vfio package's mode.
func vfioMode(s string) vfio.Mode {
	switch s {
	case config.VFIOGroup:
		return vfio.ModeGroup
	case config.VFIOIOMMUFD:
		return vfio.ModeIOMMUFD
	}
	return vfio.ModeAuto
}

// checkNIC refuses a function no NIC driver supports before its backend opens it, from
// the ids in sysfs: the error names the device and lists the supported ones, and the host
// is left as it was. It returns those ids, which identify the function for its open
// (nic.OpenDriver). A function sysfs does not describe is left for the open to identify
// from its configuration space, and to refuse: its id is the zero DeviceID.
func (b *backends) checkNIC(p config.Port, addr pci.Addr) (nic.DeviceID, error) {
	h, err := pcihost.New(cmp.Or(b.root, "/"))
	if err != nil {
		return nic.DeviceID{}, nil
	}
	info, err := h.Device(addr)
	if err != nil {
		return nic.DeviceID{}, nil
	}
	id := nic.DeviceID{Vendor: uint16(info.VendorID), Device: uint16(info.DeviceID)}
	if _, err := nic.Lookup(id.Vendor, id.Device, p.NIC); err != nil {
		return nic.DeviceID{}, fmt.Errorf("port %s: %s: %w", p.Name, addr, err)
	}
	if virtio.Match(id.Vendor, id.Device) && p.ITR != 0 {
		// nic: virtio refuses it in the configuration; nic: auto finds out here.
		return nic.DeviceID{}, fmt.Errorf("port %s: %s is virtio-net, which has no interrupt moderation: itr %v: %w",
			p.Name, addr, p.ITR, pci.ErrNotSupported)
	}
	return id, nil
}

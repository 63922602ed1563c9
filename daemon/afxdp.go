package daemon

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/nic/afxdp"
	"github.com/uiod/uiod/pci"
)

// requester is what tells that the kernel takes p's device back (removal.go): a PCI
// function's device-request interrupt, or for an af_xdp port the deletion of its
// interface as its rtnetlink watch sees it. An af_xdp port then takes the removed PCI
// device's path: absent in /status while the interface is gone, re-opened (program
// attached, sockets bound on the new ifindex) once an interface of that name is up.
func (p *port) requester() (pci.Requester, bool) {
	if p.cfg.Driver == config.DriverAFXDP {
		r, ok := p.nic.(pci.Requester)
		return r, ok
	}
	r, ok := p.dev.(pci.Requester)
	return r, ok
}

// openAFXDP opens an af_xdp port: the XDP program attached to its interface, one socket
// per queue. /status's nic says the attach mode and whether zero-copy was had
// ("af_xdp native copy").
func (b *backends) openAFXDP(p config.Port) (*port, error) {
	cfg, err := afxdpConfig(p)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	cfg.Log = b.log.Named("af_xdp." + p.Name)
	np, err := afxdp.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	return &port{cfg: p, nic: np, nicName: np.Describe()}, nil
}

// afxdpConfig is the nic/afxdp configuration of port p.
func afxdpConfig(p config.Port) (afxdp.Config, error) {
	mode, err := afxdp.ParseMode(p.XDP.Mode)
	if err != nil {
		return afxdp.Config{}, err
	}
	zc, err := afxdp.ParseZeroCopy(p.XDP.ZeroCopy)
	if err != nil {
		return afxdp.Config{}, err
	}
	var pass []uint16
	for _, e := range p.XDP.Pass.Ethertypes {
		pass = append(pass, uint16(e))
	}
	return afxdp.Config{
		Interface:      p.Interface,
		QueueStart:     p.XDP.QueueStart,
		Queues:         int(p.XDP.Queues),
		Partial:        p.XDP.Partial,
		RxRing:         p.RxRing,
		TxRing:         p.TxRing,
		FrameSize:      p.XDP.FrameSize,
		MTU:            p.PortMTU(),
		Mode:           mode,
		ZeroCopy:       zc,
		Promiscuous:    p.Promiscuous,
		Replace:        p.XDP.Replace,
		BusyPoll:       p.XDP.BusyPoll,
		BusyPollUsecs:  p.XDP.BusyPollUsecs,
		BusyPollBudget: p.XDP.BusyPollBudget,
		PassEthertypes: pass,
		Napi: afxdp.NapiSettings{
			DeferHardIRQs:     uint32(p.XDP.Napi.DeferHardIRQs),
			GROFlushTimeout:   p.XDP.Napi.GROFlushTimeout,
			IRQSuspendTimeout: p.XDP.Napi.IRQSuspendTimeout,
		},
	}, nil
}

// deviceField names p's device in the removal log: its interface for an af_xdp port, its
// PCI address otherwise.
func (p *port) deviceField() zap.Field {
	if p.cfg.Driver == config.DriverAFXDP {
		return zap.String("interface", p.cfg.Interface)
	}
	return zap.Stringer("pci", p.addr)
}

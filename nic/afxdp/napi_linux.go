//go:build linux

package afxdp

import (
	"errors"
	"slices"

	"go.uber.org/zap"
)

// napiSaved is a NAPI instance's settings before the port changed them, put back at
// Close.
type napiSaved struct {
	id  uint32
	old NapiSettings
}

// setNapi applies cfg's NAPI knobs to the NAPI instances of the bound queues, probing by
// trying: a kernel without the netdev family or napi-set, an interface without NAPI
// instances (veth in generic mode) or a knob the kernel refuses is logged, never an
// error — the port works without them. What was set is put back by restoreNapi.
func (p *Port) setNapi(cfg Config) {
	which := cfg.Napi.knobs()
	if which == 0 {
		return
	}
	log := p.log.With(zap.String("interface", p.name))
	nd, err := DialNetdev()
	if err != nil {
		log.Warn("napi: knobs not set: "+err.Error()+" (napi-set needs Linux 6.13)", zap.Error(err))
		return
	}
	ids := p.queueNapis(nd)
	all, err := nd.Napis(p.ifindex)
	if err != nil {
		nd.Close()
		log.Warn("napi: knobs not set: the kernel has no napi-get (Linux 6.13+)", zap.Error(err))
		return
	}
	if len(ids) == 0 {
		// The kernel does not say which NAPI serves a queue: all of the interface's.
		for _, n := range all {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 {
		nd.Close()
		log.Warn("napi: knobs not set: the interface has no NAPI instance (a virtual device, or veth without a native XDP program)")
		return
	}
	p.nd = nd
	for _, id := range ids {
		i := slices.IndexFunc(all, func(n Napi) bool { return n.ID == id })
		if i < 0 {
			continue
		}
		got := which
		err := nd.SetNapi(id, cfg.Napi, got)
		if err != nil && got&KnobIRQSuspendTimeout != 0 {
			got &^= KnobIRQSuspendTimeout
			if err2 := nd.SetNapi(id, cfg.Napi, got); err2 == nil {
				log.Warn("napi: irq_suspend_timeout refused by the kernel (IRQ suspension needs Linux 6.13); the other knobs set", zap.Uint32("napi", id), zap.Error(err))
				err = nil
			}
		}
		if err != nil {
			log.Warn("napi: knobs refused", zap.Uint32("napi", id), zap.Error(err))
			continue
		}
		p.napiSaved = append(p.napiSaved, napiSaved{id: id, old: all[i].NapiSettings})
		p.napiKnobs = got
	}
	if len(p.napiSaved) > 0 {
		log.Info("napi", zap.Int("instances", len(p.napiSaved)), zap.Uint32("defer_hard_irqs", cfg.Napi.DeferHardIRQs),
			zap.Duration("gro_flush_timeout", cfg.Napi.GROFlushTimeout), zap.Duration("irq_suspend_timeout", cfg.Napi.IRQSuspendTimeout))
	}
}

// queueNapis returns the NAPI instances the kernel names for the bound queues, each once.
func (p *Port) queueNapis(nd *Netdev) []uint32 {
	var ids []uint32
	for _, q := range p.queues {
		id, err := nd.QueueNapi(p.ifindex, q.id)
		if err == nil && id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// restoreNapi puts back the settings setNapi changed (nothing if the interface is gone).
func (p *Port) restoreNapi() error {
	if p.nd == nil {
		return nil
	}
	var errs []error
	if !p.gone.Load() {
		for _, s := range p.napiSaved {
			errs = append(errs, p.nd.SetNapi(s.id, s.old, p.napiKnobs))
		}
	}
	p.napiSaved = nil
	errs = append(errs, p.nd.Close())
	p.nd = nil
	return errors.Join(errs...)
}

// NapiSettings returns the settings of the NAPI instances the port set, as the kernel
// reports them now (none if it set none).
func (p *Port) NapiSettings() ([]Napi, error) {
	if p.nd == nil {
		return nil, nil
	}
	all, err := p.nd.Napis(p.ifindex)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(n Napi) bool {
		return !slices.ContainsFunc(p.napiSaved, func(s napiSaved) bool { return s.id == n.ID })
	}), nil
}

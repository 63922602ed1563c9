package vhost

import (
	"fmt"
	"runtime/debug"
)

// The front end's memory is a shared mapping of its file, which it can truncate at any
// moment: a load or store past the file's new end raises SIGBUS, which the Go runtime turns
// into a fatal error unless the goroutine armed debug.SetPanicOnFault, a per-goroutine
// setting. Every access to that memory, on whichever goroutine, happens inside an armed
// section, of which there are two forms:
//
//   - on the poll thread, arm and disarm (RxBurst, TxBurst, EnableRxInterrupt and
//     DisableRxInterrupt), with the ring's lock held;
//   - on the control goroutine, Port.armed (a ring's start and its first notification
//     setting), with the ring's lock held.
//
// A fault in either stops the ring and ends the front end's connection like any broken
// rule; the process is never at risk. Nothing else touches the mapping: the layout code
// only computes slices, and the memory is unmapped only when no ring uses it.

// arm arms the poll thread for a section on r (r.mu held); disarm, deferred, ends it.
func arm(r *vring) { r.oldFault = debug.SetPanicOnFault(true) }

// disarm ends the poll thread's armed section on r: a fault inside it stops the front end
// (Port.fault), the goroutine's fault setting is restored and r.mu released. It must be
// the deferred function itself, for recover to see the panic.
func (p *Port) disarm(r *vring) {
	if e := recover(); e != nil {
		p.fault(r, memFault(e))
	}
	debug.SetPanicOnFault(r.oldFault)
	r.mu.Unlock()
}

// armed runs fn, which touches the front end's memory through r (r.mu held), on the
// control goroutine: a fault stops r and is returned as a protocol violation.
func (p *Port) armed(r *vring, fn func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if e := recover(); e != nil {
			r.stop()
			err = fmt.Errorf("%w: %v", errProto, memFault(e))
		}
	}()
	fn()
	return nil
}

func memFault(e any) error { return fmt.Errorf("fault in the front end's memory: %v", e) }

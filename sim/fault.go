package sim

import "fmt"

// FaultKind classifies a fault the model detected in the driver's use of the device.
type FaultKind int

// Fault kinds.
const (
	// UnknownRead and UnknownWrite are accesses to an offset no register lives at.
	UnknownRead FaultKind = iota + 1
	UnknownWrite
	// DMAFault is a device access to a bus address the driver never mapped.
	DMAFault
	// AccessAfterClose is a register access after Close.
	AccessAfterClose
	// Protocol is any other misuse a real device would choke on (a tail pointer outside
	// the ring, a malformed descriptor), reported by the device model.
	Protocol
)

// faultNames are the kinds' names, indexed by FaultKind ("" for the zero kind, which names
// no fault).
var faultNames = [...]string{
	UnknownRead:      "unknown register read",
	UnknownWrite:     "unknown register write",
	DMAFault:         "dma fault",
	AccessAfterClose: "access after close",
	Protocol:         "protocol violation",
}

// String names the kind.
func (k FaultKind) String() string {
	if k > 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("sim.FaultKind(%d)", int(k))
}

// Fault is one recorded fault.
type Fault struct {
	Kind FaultKind
	Addr uint64 // register offset or IOVA
	Msg  string // what the model was doing
}

// Error describes the fault.
func (f Fault) Error() string {
	switch f.Kind {
	case UnknownRead, UnknownWrite, AccessAfterClose:
		return fmt.Sprintf("%v at 0x%05x%s", f.Kind, f.Addr, suffix(f.Msg))
	case DMAFault:
		return fmt.Sprintf("%v at iova 0x%x%s", f.Kind, f.Addr, suffix(f.Msg))
	}
	return fmt.Sprintf("%v%s", f.Kind, suffix(f.Msg))
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// maxFaults bounds the faults a device keeps (the count goes on).
const maxFaults = 64

// Package nic is the NIC layer a user of a port sees: the Port batch API every driver
// implements, its Config, Link and Stats, packet buffers and their mempool in DMA memory,
// and the driver registry (Register, Open). Descriptor rings are each driver family's own
// business (the Intel advanced-descriptor rings live under nic/internal).
package nic

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// Port is an initialised NIC port with its RX and TX queues running.
//
// Threading: each queue is used by one goroutine at a time (the dataplane gives every queue
// to exactly one locked OS thread). Different queues may be used concurrently. Link, Stats,
// MAC and the queue counts may be called from any goroutine.
//
// Buffer ownership: RxBurst hands the returned buffers to the caller, who must give each
// one back exactly once, by Buf.Free or by passing it to TxBurst on any port. TxBurst takes
// the buffers it accepted (a prefix of the slice) and frees them itself once the NIC has
// sent them; the caller still owns the rest. A Mempool is not safe for concurrent use, so a
// buffer received on one thread must be sent or freed on that same thread.
type Port interface {
	// MAC is the port's station address.
	MAC() net.HardwareAddr
	// NumRxQueues and NumTxQueues are the configured queue counts.
	NumRxQueues() int
	NumTxQueues() int
	// RxBurst moves up to len(bufs) received frames from RX queue q into bufs[0:n] and
	// returns n. It never blocks and never allocates; it refills the ring as it goes.
	RxBurst(q int, bufs []*Buf) int
	// TxBurst queues bufs[0:n] on TX queue q and returns n (0 ≤ n ≤ len(bufs)): fewer
	// than len(bufs) when the ring is full. It reclaims completed descriptors first and
	// rings the doorbell once per call. A buffer from a pool the device cannot address
	// (another DMA address space) is copied into a buffer of the queue's own and freed.
	TxBurst(q int, bufs []*Buf) int
	// RxVector is the interrupt vector that fires for RX queue q, or nil if the port has
	// no interrupts. In INTx mode every queue returns the same vector.
	RxVector(q int) *irq.Vector
	// EnableRxInterrupt unmasks RX queue q's interrupt, acknowledging and re-arming a
	// level-triggered (INTx) vector, so that the next received frame fires RxVector(q).
	EnableRxInterrupt(q int)
	// DisableRxInterrupt masks RX queue q's interrupt.
	DisableRxInterrupt(q int)
	// Link reports the current link state.
	Link() Link
	// Stats returns the port's 64-bit counters since it was opened.
	Stats() Stats
	// Close stops the queues, masks interrupts and closes the device (bus mastering off,
	// then DMA memory freed). Buffers still owned by callers must not be used afterwards.
	Close() error
}

// Link is the state of a port's link.
type Link struct {
	Up        bool
	SpeedMbps int
}

// Stats are a port's counters, accumulated in software from the NIC's read-to-clear
// registers and the driver's own accounting.
type Stats struct {
	RxPackets uint64 // frames received by the NIC
	RxBytes   uint64
	TxPackets uint64 // frames sent by the NIC
	TxBytes   uint64
	RxMissed  uint64 // frames the NIC dropped: no free descriptor on the queue, or a full packet buffer
	RxErrors  uint64 // bad write-backs (length, status, index) the driver refused
	TxErrors  uint64 // frames refused, or discarded by a TX queue reset before the NIC fetched them
	// TxTimeouts counts TX queues found hung (descriptors not written back within twice
	// Config.TxTimeout) and reset by the driver.
	TxTimeouts uint64
	// DeviceResets counts resets of the whole device the driver did to recover it from
	// a state it reported it cannot leave by itself (virtio: DEVICE_NEEDS_RESET), or to
	// follow what the function's owner did to it (igbvf: a PF reset or a PF that took
	// clear-to-send away, once per event however many attempts it took).
	DeviceResets uint64
}

// Config selects how a driver brings a port up.
type Config struct {
	RxQueues int // number of RX queues (default 1)
	TxQueues int // number of TX queues (default 1)
	RxRing   int // RX descriptors per queue, power of two (default 512)
	TxRing   int // TX descriptors per queue, power of two (default 512)
	// MTU is the IP MTU, as Linux's: frames up to MaxFrame(MTU) bytes without FCS are
	// received and sent, longer ones dropped and counted (default DefaultMTU, 1500).
	MTU         int
	BufSize     int           // packet buffer size in bytes (default BufSizeFor(MTU): 2048 for 1500)
	PoolSize    int           // buffers per RX queue's mempool (default 2×RxRing + TxRing)
	ITR         time.Duration // minimum interrupt interval; 0 = no moderation
	Promiscuous bool
	// Interrupts selects the interrupt mode. The zero value, IRQDefault, uses MSI-X and
	// falls back to INTx only when the backend reports MSI-X as not supported
	// (pci.ErrNotSupported, as uio_pci_generic does); IRQMSIX fails instead; IRQNone
	// means poll only.
	Interrupts IRQMode
	// NoIRQ is the older spelling of Interrupts: IRQNone; WithDefaults turns it into that.
	//
	// Deprecated: use Interrupts: IRQNone.
	NoIRQ bool
	// LinkTimeout bounds the wait for link-up at open (default 2 s; the port opens with
	// link down after it, and a warning is the caller's business).
	LinkTimeout time.Duration
	// TxTimeout is the TX hang check interval (default 1 s): a TX queue with frames
	// pending and no descriptor written back for twice TxTimeout (checked from TxBurst)
	// is reset by the driver, its pending buffers freed, and it takes frames again.
	TxTimeout time.Duration
}

// Driver is a NIC driver that can open devices it recognises.
type Driver struct {
	Name  string
	Match func(vendor, device uint16) bool
	Open  func(dev pci.Device, cfg Config) (Port, error)
	// Devices lists what Match accepts, for the error that refuses anything else.
	Devices []DeviceID
	// Facts is what the driver takes, for callers that check a configuration before a
	// port opens: they ask the registry (Named), not the driver's package.
	Facts Facts
}

// Facts are a driver's limits and abilities as it programs the device.
type Facts struct {
	// Chip names the device in messages, e.g. "82599 (ixgbe)".
	Chip string
	// Limits are the most queues per direction and the largest ring the driver takes.
	Limits Limits
	// ITRUnit is the step of the interrupt throttle interval and MaxITR the longest
	// interval the device holds; MaxITR 0: the device has no interrupt moderation.
	ITRUnit, MaxITR time.Duration
	// DescSize is the bytes of one RX or TX descriptor, for DMA memory estimates.
	DescSize int
	// NoINTx: the function has no legacy interrupt pin (a virtual function), so
	// neither interrupts: intx nor uio_pci_generic can drive it.
	NoINTx bool
	// NoPromiscuous: the function cannot receive unicast frames for other addresses
	// (a VF, whose PF filters them).
	NoPromiscuous bool
	// PairedQueues: the queues come in RX/TX pairs and the device receives on every
	// pair in use, so a port cannot have more TX than RX queues (virtio-net).
	PairedQueues bool
}

// Named returns the registered driver called name.
func Named(name string) (Driver, bool) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	d, ok := drivers[name]
	return d, ok
}

// DeviceID is one PCI function a driver supports.
type DeviceID struct {
	Vendor, Device uint16
	Name           string // e.g. "82599 SFP+"
}

// String is vendor:device and the name, as "8086:10fb (82599 SFP+)".
func (d DeviceID) String() string {
	if d.Name == "" {
		return fmt.Sprintf("%04x:%04x", d.Vendor, d.Device)
	}
	return fmt.Sprintf("%04x:%04x (%s)", d.Vendor, d.Device, d.Name)
}

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
)

// Register makes a driver available to Open. Drivers call it from init.
func Register(d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[d.Name]; dup {
		panic("nic: driver registered twice: " + d.Name)
	}
	drivers[d.Name] = d
}

// Drivers lists the registered driver names, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNoDriver is returned by Open and Lookup when no registered driver supports the
// device.
var ErrNoDriver = errors.New("no driver for device")

// Lookup returns the driver that opens vendor:device: the named one, or the one whose
// Match accepts it when name is "auto" or "". A device no driver supports is refused
// with an error that lists what is supported.
func Lookup(vendor, device uint16, name string) (Driver, error) {
	driversMu.RLock()
	defer driversMu.RUnlock()
	id := DeviceID{Vendor: vendor, Device: device}
	if name == "" || name == "auto" {
		for _, n := range sortedKeys(drivers) {
			if drivers[n].Match(vendor, device) {
				return drivers[n], nil
			}
		}
		return Driver{}, fmt.Errorf("unsupported device %s, supported are %s: %w", id, supportedLocked(""), ErrNoDriver)
	}
	d, ok := drivers[name]
	if !ok {
		return Driver{}, fmt.Errorf("unknown NIC driver %q (have %v): %w", name, sortedKeys(drivers), ErrNoDriver)
	}
	if !d.Match(vendor, device) {
		return Driver{}, fmt.Errorf("unsupported device %s for driver %s, supported are %s: %w", id, name, supportedLocked(name), ErrNoDriver)
	}
	return d, nil
}

// Supported lists the devices of the named driver, or of every registered driver when
// name is "" or "auto", as one line.
func Supported(name string) string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	return supportedLocked(name)
}

func supportedLocked(name string) string {
	var parts []string
	for _, n := range sortedKeys(drivers) {
		if name != "" && name != "auto" && n != name {
			continue
		}
		d := drivers[n]
		ids := make([]string, len(d.Devices))
		for i, id := range d.Devices {
			ids[i] = id.String()
		}
		if len(ids) == 0 {
			ids = []string{"devices its Match accepts"}
		}
		parts = append(parts, n+": "+strings.Join(ids, ", "))
	}
	if len(parts) == 0 {
		return "none (no NIC driver registered)"
	}
	return strings.Join(parts, "; ")
}

func sortedKeys(m map[string]Driver) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

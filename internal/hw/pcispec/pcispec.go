// Package pcispec holds the sizes of a PCI function's configuration space (PCI Local Bus
// 3.0 §6.1, PCI Express Base §7.2) that the backends, the drivers and the device models
// share.
package pcispec

const (
	// HeaderLen is the predefined header of a type 0 function; the capability list lives
	// after it, and a capability pointer below it is malformed.
	HeaderLen = 0x40
	// ConfigLen is conventional configuration space, where the standard capability list
	// lives.
	ConfigLen = 256
	// ExtConfigLen is PCI Express extended configuration space.
	ExtConfigLen = 4096
	// MaxCapPointer is the highest dword-aligned offset a standard capability can start at.
	MaxCapPointer = ConfigLen - 4
)

package pci

import "errors"

// ErrNotSupported is returned, wrapped with the reason, when a backend or device cannot do
// what was asked (no MSI-X under uio_pci_generic, no such region, an OS without the kernel
// interface). Callers that fall back to something else (MSI-X → INTx) test for it with
// errors.Is and treat every other error as a failure. It is errors.ErrUnsupported, so the
// packages below pci (irq, wire), which wrap the standard library's sentinel in their
// non-Linux builds, match it too.
var ErrNotSupported = errors.ErrUnsupported

// ErrClosed is returned, wrapped with what was closed, by an operation on a device (its
// regions, interrupts and config space), a vfio container or a DMA allocator after its
// Close. A wire has its own, wire.ErrClosed.
var ErrClosed = errors.New("closed")

// ErrMalformed is wrapped by every error about content that does not have the expected
// format: configuration space, or a sysfs or procfs file read by package pcihost.
var ErrMalformed = errors.New("malformed")

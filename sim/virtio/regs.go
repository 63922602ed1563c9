package virtio

// BAR4 layout (QEMU's): one 4 KiB page per structure.
const (
	barIndex   = 4
	barSize    = 0x4000
	commonBase = 0x0000
	isrBase    = 0x1000
	deviceBase = 0x2000
	notifyBase = 0x3000
	pageLen    = 0x1000
	notifyMult = 4
)

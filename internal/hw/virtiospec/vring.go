package virtiospec

// Split virtqueue descriptor flags.
const (
	DescNext     = 1
	DescWrite    = 2 // device-writable
	DescIndirect = 4
)

// Split virtqueue ring flags (without EVENT_IDX).
const (
	AvailNoInterrupt = 1 // driver → device: do not interrupt
	UsedNoNotify     = 1 // device → driver: do not notify
)

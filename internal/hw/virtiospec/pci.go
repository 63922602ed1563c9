package virtiospec

// Vendor-specific PCI capability (cap id 0x09) layout and its cfg_type values.
const (
	CapIDVendor = 0x09

	CapCommon = 1
	CapNotify = 2
	CapISR    = 3
	CapDevice = 4

	CapOffType   = 3
	CapOffBAR    = 4
	CapOffOffset = 8
	CapOffLength = 12
	CapOffMult   = 16 // notify capability: notify_off_multiplier
	CapLen       = 16
	CapNotifyLen = 20
)

// Common configuration structure offsets.
const (
	ComDevFeatureSel  = 0
	ComDevFeature     = 4
	ComDrvFeatureSel  = 8
	ComDrvFeature     = 12
	ComMSIXConfig     = 16
	ComNumQueues      = 18
	ComStatus         = 20
	ComConfigGen      = 21
	ComQueueSelect    = 22
	ComQueueSize      = 24
	ComQueueMSIX      = 26
	ComQueueEnable    = 28
	ComQueueNotifyOff = 30
	ComQueueDesc      = 32
	ComQueueDriver    = 40
	ComQueueDevice    = 48
	ComLen            = 56
)

// Device status bits.
const (
	StatusAcknowledge = 1
	StatusDriver      = 2
	StatusDriverOK    = 4
	StatusFeaturesOK  = 8
	StatusNeedsReset  = 64
	StatusFailed      = 128
)

// ISR status bits.
const (
	ISRQueue  = 1
	ISRConfig = 2
)

// NoVector is the MSI-X vector number meaning "no vector".
const NoVector = 0xffff

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
	commonLen  = 0x38
)

// Common configuration offsets.
const (
	comDevFeatureSel  = 0
	comDevFeature     = 4
	comDrvFeatureSel  = 8
	comDrvFeature     = 12
	comMSIXConfig     = 16
	comNumQueues      = 18
	comStatus         = 20
	comConfigGen      = 21
	comQueueSelect    = 22
	comQueueSize      = 24
	comQueueMSIX      = 26
	comQueueEnable    = 28
	comQueueNotifyOff = 30
	comQueueDesc      = 32
	comQueueDriver    = 40
	comQueueDevice    = 48
)

// Status bits.
const (
	statusAcknowledge = 1
	statusDriver      = 2
	statusDriverOK    = 4
	statusFeaturesOK  = 8
	statusNeedsReset  = 64
	statusFailed      = 128
)

// Feature bits.
const (
	featMAC         = 5
	featStatus      = 16
	featCtrlVQ      = 17
	featMQ          = 22
	featEventIdx    = 29
	featVersion1    = 32
	featAccessPlat  = 33
	featSpeedDuplex = 63
)

// Device configuration layout.
const (
	netCfgMAC      = 0
	netCfgStatus   = 6
	netCfgMaxPairs = 8
	netCfgMTU      = 10
	netCfgSpeed    = 12
	netCfgDuplex   = 16
	netCfgLen      = 20
)

const (
	noVector       = 0xffff
	netHdrLen      = 12
	isrQueue       = 1
	isrConfig      = 2
	linkUpBit      = 1
	descNext       = 1
	descWrite      = 2
	descIndir      = 4
	noInterrup     = 1 // available ring flag
	ctrlClassMQ    = 4
	ctrlMQPairsSet = 0
	ctrlOK         = 0
	ctrlErr        = 1
)

package virtio

// PCI ids.
const (
	VendorID             = 0x1af4
	DeviceIDNet          = 0x1041 // modern virtio-net
	DeviceIDNetTransient = 0x1000 // transitional virtio-net (driven through its modern interface)
)

// Vendor-specific capability (cap id 0x09) layout and the cfg_type values.
const (
	capIDVendor = 0x09

	capCommon = 1
	capNotify = 2
	capISR    = 3
	capDevice = 4

	capOffType   = 3
	capOffBAR    = 4
	capOffOffset = 8
	capOffLength = 12
	capOffMult   = 16 // notify capability: notify_off_multiplier
	capMinLen    = 16
	capNotifyLen = 20
)

// Common configuration structure offsets.
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
	comLen            = 56
)

// Device status bits.
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
	featMrgRxBuf    = 15
	featStatus      = 16
	featCtrlVQ      = 17
	featMQ          = 22
	featEventIdx    = 29
	featVersion1    = 32
	featAccessPlat  = 33
	featRingPacked  = 34
	featSpeedDuplex = 63
)

// Network device configuration offsets and bits.
const (
	netCfgMAC      = 0
	netCfgStatus   = 6
	netCfgMaxPairs = 8
	netCfgSpeed    = 12
	netCfgLen      = 20

	netStatusLinkUp = 1
	speedUnknown    = 0xffffffff
)

// ISR status bits.
const (
	isrQueue  = 1
	isrConfig = 2
)

// noVector is the MSI-X vector number meaning "no vector".
const noVector = 0xffff

// netHdrLen is the virtio-net header in front of every frame with VERSION_1.
const netHdrLen = 12

// Control virtqueue commands.
const (
	ctrlClassMQ       = 4
	ctrlMQPairsSet    = 0
	ctrlAckOK         = 0
	ctrlHdrAndPairLen = 4
)

// maxFrame is the largest frame the device delivers without MTU or GSO features (1514
// bytes plus a VLAN tag); every receive buffer must hold it.
const maxFrame = 1518

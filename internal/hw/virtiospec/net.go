package virtiospec

// Feature bits (device-independent and virtio-net).
const (
	FeatMTU         = 3 // VIRTIO_NET_F_MTU: the device reports its largest MTU
	FeatMAC         = 5
	FeatMrgRxBuf    = 15
	FeatStatus      = 16
	FeatCtrlVQ      = 17
	FeatMQ          = 22
	FeatEventIdx    = 29
	FeatVersion1    = 32
	FeatAccessPlat  = 33
	FeatRingPacked  = 34
	FeatOrderPlat   = 36 // VIRTIO_F_ORDER_PLATFORM
	FeatSpeedDuplex = 63
)

// virtio-net device configuration offsets and bits.
const (
	NetCfgMAC      = 0
	NetCfgStatus   = 6
	NetCfgMaxPairs = 8
	NetCfgMTU      = 10
	NetCfgSpeed    = 12
	NetCfgDuplex   = 16
	NetCfgLen      = 20

	NetStatusLinkUp = 1
	SpeedUnknown    = 0xffffffff
)

// NetHdrLen is the virtio-net header in front of every frame with VERSION_1.
const NetHdrLen = 12

// Control virtqueue: the MQ class's pairs command and the ack values.
const (
	CtrlClassMQ    = 4
	CtrlMQPairsSet = 0
	CtrlOK         = 0
	CtrlErr        = 1
)

// CtrlMQPairsSetLen is the MQ pairs command's length: class, command and the 16-bit
// number of queue pairs.
const CtrlMQPairsSetLen = 4

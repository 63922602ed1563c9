package virtiospec

// Feature bits (device-independent and virtio-net).
const (
	FeatMTU         = 3 // VIRTIO_NET_F_MTU: the device reports its largest MTU
	FeatMAC         = 5
	FeatMrgRxBuf    = 15
	FeatStatus      = 16
	FeatCtrlVQ      = 17
	FeatCtrlRX      = 18 // VIRTIO_NET_F_CTRL_RX: the RX mode commands (promiscuous, all-multicast)
	FeatMQ          = 22
	FeatCtrlMACAddr = 23 // VIRTIO_NET_F_CTRL_MAC_ADDR: the MAC address command
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

// Control virtqueue: the RX mode class (VIRTIO_NET_CTRL_RX, with VIRTIO_NET_F_CTRL_RX;
// one byte of data, on or off) and the MAC class (VIRTIO_NET_CTRL_MAC: the filter table,
// a 32-bit count of unicast addresses and the addresses, then a count of multicast ones
// and those; with VIRTIO_NET_F_CTRL_MAC_ADDR the station address, 6 bytes).
const (
	CtrlClassRX     = 0
	CtrlRXPromisc   = 0
	CtrlRXAllMulti  = 1
	CtrlClassMAC    = 1
	CtrlMACTableSet = 0
	CtrlMACAddrSet  = 1
)

// CtrlMQPairsSetLen is the MQ pairs command's length: class, command and the 16-bit
// number of queue pairs.
const CtrlMQPairsSetLen = 4

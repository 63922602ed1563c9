package vhost

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Front-end requests (the vhost-user specification's numbering).
const (
	reqGetFeatures         = 1
	reqSetFeatures         = 2
	reqSetOwner            = 3
	reqResetOwner          = 4
	reqSetMemTable         = 5
	reqSetLogBase          = 6
	reqSetLogFd            = 7
	reqSetVringNum         = 8
	reqSetVringAddr        = 9
	reqSetVringBase        = 10
	reqGetVringBase        = 11
	reqSetVringKick        = 12
	reqSetVringCall        = 13
	reqSetVringErr         = 14
	reqGetProtocolFeatures = 15
	reqSetProtocolFeatures = 16
	reqGetQueueNum         = 17
	reqSetVringEnable      = 18
	reqNetSetMTU           = 20 // VHOST_USER_NET_SET_MTU (protocol feature NET_MTU)
)

// Header flags.
const (
	flagVersion   = 0x1 // bits 0-1: protocol version 1
	flagVersMask  = 0x3
	flagReply     = 0x4
	flagNeedReply = 0x8
)

// Feature bits the back end offers or refers to.
const (
	featMTU             = 3  // VIRTIO_NET_F_MTU: the MTU in the config space (QEMU serves it, see session.setMTU)
	featMrgRxBuf        = 15 // VIRTIO_NET_F_MRG_RXBUF: a frame spread over several RX chains
	featMQ              = 22 // VIRTIO_NET_F_MQ: offered when the port has more than one pair
	featEventIdx        = 29
	featProtocolFeature = 30 // VHOST_USER_F_PROTOCOL_FEATURES
	featVersion1        = 32
)

// Protocol feature bits.
const (
	protoMQ       = 0
	protoReplyAck = 3
	protoNetMTU   = 4 // VHOST_USER_PROTOCOL_F_NET_MTU: NET_SET_MTU
)

// offeredFeatures and offeredProtocol are what GET_FEATURES and GET_PROTOCOL_FEATURES
// answer (with featMQ besides on a port of more than one pair, see Port.offer).
const (
	offeredFeatures = 1<<featVersion1 | 1<<featEventIdx | 1<<featProtocolFeature | 1<<featMrgRxBuf | 1<<featMTU
	offeredProtocol = 1<<protoMQ | 1<<protoReplyAck | 1<<protoNetMTU
)

// MaxQueuePairs is the most queue pairs a port offers (Config.Queues): the configuration's
// rx_queues and tx_queues limit.
const MaxQueuePairs = 16

// MaxMTU is the largest Config.MTU (a frame of 9734 bytes; as the Intel parts' 9710, the
// configuration's limit for a vhost-user port).
const MaxMTU = 9710

// Limits on what a front end may send.
const (
	hdrSize     = 12
	maxPayload  = 4096
	maxRegions  = 8
	maxFds      = maxRegions
	numVrings   = 2 // vrings per queue pair: 2q guest RX, 2q+1 guest TX
	maxVrings   = 2 * MaxQueuePairs
	maxRingSize = 32768 // the split ring's largest queue size
	vringFdMask = 0xff  // SET_VRING_KICK/CALL/ERR: the index bits
	vringNoFd   = 0x100 // ... and "no descriptor: poll"
	regionSize  = 32
	memHdrSize  = 8
	addrSize    = 40
	stateSize   = 8
)

// errProto marks a message that breaks the protocol: the front end is disconnected.
var errProto = errors.New("vhost-user protocol violation")

// header is a message's fixed part.
type header struct {
	req, flags, size uint32
}

func parseHeader(b []byte) (header, error) {
	h := header{
		req:   binary.LittleEndian.Uint32(b[0:]),
		flags: binary.LittleEndian.Uint32(b[4:]),
		size:  binary.LittleEndian.Uint32(b[8:]),
	}
	if h.flags&flagVersMask != flagVersion {
		return h, fmt.Errorf("%w: request %d: version %d, want 1", errProto, h.req, h.flags&flagVersMask)
	}
	if h.flags&flagReply != 0 {
		return h, fmt.Errorf("%w: request %d has the reply flag", errProto, h.req)
	}
	if h.size > maxPayload {
		return h, fmt.Errorf("%w: request %d: payload of %d bytes, at most %d", errProto, h.req, h.size, maxPayload)
	}
	return h, nil
}

// putReply lays out a reply to req with payload p in b, which holds hdrSize+len(p) bytes.
func putReply(b []byte, req uint32, p []byte) []byte {
	b = b[:hdrSize+len(p)]
	binary.LittleEndian.PutUint32(b[0:], req)
	binary.LittleEndian.PutUint32(b[4:], flagVersion|flagReply)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(p)))
	copy(b[hdrSize:], p)
	return b
}

// vringState is SET_VRING_NUM/BASE/ENABLE's and GET_VRING_BASE's payload.
type vringState struct{ index, num uint32 }

// vringAddr is SET_VRING_ADDR's payload: front-end virtual addresses of the ring parts.
type vringAddr struct {
	index, flags             uint32
	desc, used, avail, logGA uint64
}

// region is one entry of SET_MEM_TABLE.
type region struct {
	gpa, size, uva, offset uint64
}

func wantSize(req uint32, p []byte, n int) error {
	if len(p) < n {
		return fmt.Errorf("%w: request %d: payload of %d bytes, want %d", errProto, req, len(p), n)
	}
	return nil
}

func parseU64(req uint32, p []byte) (uint64, error) {
	if err := wantSize(req, p, 8); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(p), nil
}

func parseState(req uint32, p []byte) (vringState, error) {
	if err := wantSize(req, p, stateSize); err != nil {
		return vringState{}, err
	}
	s := vringState{binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])}
	if s.index >= maxVrings {
		return s, fmt.Errorf("%w: request %d: vring %d, at most %d", errProto, req, s.index, maxVrings)
	}
	return s, nil
}

func parseAddr(p []byte) (vringAddr, error) {
	if err := wantSize(reqSetVringAddr, p, addrSize); err != nil {
		return vringAddr{}, err
	}
	a := vringAddr{
		index: binary.LittleEndian.Uint32(p), flags: binary.LittleEndian.Uint32(p[4:]),
		desc: binary.LittleEndian.Uint64(p[8:]), used: binary.LittleEndian.Uint64(p[16:]),
		avail: binary.LittleEndian.Uint64(p[24:]), logGA: binary.LittleEndian.Uint64(p[32:]),
	}
	if a.index >= maxVrings {
		return a, fmt.Errorf("%w: SET_VRING_ADDR: vring %d, at most %d", errProto, a.index, maxVrings)
	}
	return a, nil
}

// parseVringFd decodes SET_VRING_KICK/CALL/ERR's u64: the index and whether a descriptor
// comes with it.
func parseVringFd(req uint32, p []byte, nfds int) (index int, hasFd bool, err error) {
	v, err := parseU64(req, p)
	if err != nil {
		return 0, false, err
	}
	if v&^uint64(vringFdMask|vringNoFd) != 0 {
		return 0, false, fmt.Errorf("%w: request %d: unknown bits in 0x%x", errProto, req, v)
	}
	index, hasFd = int(v&vringFdMask), v&vringNoFd == 0
	if index >= maxVrings {
		return 0, false, fmt.Errorf("%w: request %d: vring %d, at most %d", errProto, req, index, maxVrings)
	}
	want := 0
	if hasFd {
		want = 1
	}
	if nfds != want {
		return 0, false, fmt.Errorf("%w: request %d: %d descriptors, want %d", errProto, req, nfds, want)
	}
	return index, hasFd, nil
}

// parseMemTable decodes and checks SET_MEM_TABLE (see checkRegions) sent with nfds
// descriptors.
func parseMemTable(p []byte, nfds int) ([]region, error) {
	if err := wantSize(reqSetMemTable, p, memHdrSize); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(p)
	if n == 0 || n > maxRegions {
		return nil, fmt.Errorf("%w: SET_MEM_TABLE: %d regions, want 1 to %d", errProto, n, maxRegions)
	}
	if err := wantSize(reqSetMemTable, p, memHdrSize+int(n)*regionSize); err != nil {
		return nil, err
	}
	if nfds != int(n) {
		return nil, fmt.Errorf("%w: SET_MEM_TABLE: %d descriptors for %d regions", errProto, nfds, n)
	}
	rs := make([]region, n)
	for i := range rs {
		b := p[memHdrSize+i*regionSize:]
		rs[i] = region{
			gpa: binary.LittleEndian.Uint64(b), size: binary.LittleEndian.Uint64(b[8:]),
			uva: binary.LittleEndian.Uint64(b[16:]), offset: binary.LittleEndian.Uint64(b[24:]),
		}
	}
	return rs, checkRegions(rs)
}

// maxRegionSize bounds one region, its file offset and all regions together: 128 TiB, the
// whole of a 64-bit process's address space on x86-64 (47 bits), so that no guest a host
// can run is refused, and far below overflow. mmap refuses what does not fit.
const maxRegionSize = 1 << 47

// checkRegions refuses empty or oversized regions, ranges that overflow 64 bits, and
// regions that overlap in guest-physical or front-end virtual addresses.
func checkRegions(rs []region) error {
	var total uint64
	for i, r := range rs {
		switch {
		case r.size == 0 || r.size > maxRegionSize:
			return fmt.Errorf("%w: region %d: size 0x%x, want 1 to 0x%x", errProto, i, r.size, uint64(maxRegionSize))
		case r.gpa+r.size < r.gpa, r.uva+r.size < r.uva, r.offset+r.size < r.offset, r.offset > maxRegionSize:
			return fmt.Errorf("%w: region %d: range overflows (gpa 0x%x uva 0x%x offset 0x%x size 0x%x)", errProto, i, r.gpa, r.uva, r.offset, r.size)
		}
		if total += r.size; total > maxRegionSize {
			return fmt.Errorf("%w: regions 0 to %d: 0x%x bytes together, at most 0x%x", errProto, i, total, uint64(maxRegionSize))
		}
		for j := range i {
			o := rs[j]
			if r.gpa < o.gpa+o.size && o.gpa < r.gpa+r.size {
				return fmt.Errorf("%w: regions %d and %d overlap in guest addresses", errProto, j, i)
			}
			if r.uva < o.uva+o.size && o.uva < r.uva+r.size {
				return fmt.Errorf("%w: regions %d and %d overlap in front-end addresses", errProto, j, i)
			}
		}
	}
	return nil
}

// message is one request with the descriptors that came with it.
type message struct {
	hdr     header
	payload []byte
	fds     []int
}

// closeFds closes the descriptors handle did not take (it sets taken ones to -1).
func (m *message) closeFds() {
	for _, fd := range m.fds {
		if fd >= 0 {
			closeFd(fd)
		}
	}
}

package capture

import (
	"encoding/binary"
	"io"
	"net"
	"time"
)

// pcapng block types and option codes (draft-ietf-opsawg-pcapng).
const (
	blockSHB       = 0x0A0D0D0A
	blockIDB       = 0x00000001
	blockISB       = 0x00000005
	blockEPB       = 0x00000006
	byteOrderMagic = 0x1A2B3C4D

	optEnd     = 0
	optComment = 1

	optSHBHardware = 2
	optSHBOS       = 3
	optSHBUserAppl = 4

	optIfName        = 2
	optIfDescription = 3
	optIfMACAddr     = 6
	optIfSpeed       = 8
	optIfTsresol     = 9
	optIfFilter      = 11
	optIfOS          = 12
	optIfHardware    = 15

	optEPBFlags = 2
	optEPBQueue = 6

	optISBStartTime    = 2
	optISBEndTime      = 3
	optISBIfRecv       = 4
	optISBIfDrop       = 5
	optISBFilterAccept = 6
	optISBUsrDeliv     = 8

	epbInbound  = 1
	epbOutbound = 2

	linkTypeEthernet = 1
)

// ngWriter writes a pcapng section in host byte order, one block at a time through a
// scratch buffer it reuses (writing a packet allocates nothing).
type ngWriter struct {
	w   io.Writer
	buf []byte
}

// ngInterface is what an interface description block says.
type ngInterface struct {
	name, description, hardware, filter string
	mac                                 net.HardwareAddr
	speedBps                            uint64 // 0: not known
	snaplen                             uint32
}

// ngStats is what an interface statistics block says.
type ngStats struct {
	start, end                         time.Time
	recv, drop, filterAccept, usrDeliv uint64
	comment                            string
}

func (n *ngWriter) u16(v uint16) { n.buf = binary.NativeEndian.AppendUint16(n.buf, v) }
func (n *ngWriter) u32(v uint32) { n.buf = binary.NativeEndian.AppendUint32(n.buf, v) }
func (n *ngWriter) u64(v uint64) { n.buf = binary.NativeEndian.AppendUint64(n.buf, v) }

// pad appends zeros up to a multiple of 4.
func (n *ngWriter) pad() {
	for len(n.buf)%4 != 0 {
		n.buf = append(n.buf, 0)
	}
}

func (n *ngWriter) begin(typ uint32) {
	n.buf = n.buf[:0]
	n.u32(typ)
	n.u32(0) // length, set by end
}

func (n *ngWriter) opt(code uint16, v []byte) {
	n.u16(code)
	n.u16(uint16(len(v)))
	n.buf = append(n.buf, v...)
	n.pad()
}

func (n *ngWriter) optString(code uint16, s string) {
	if s == "" {
		return
	}
	if len(s) > 0xffff {
		s = s[:0xffff]
	}
	n.u16(code)
	n.u16(uint16(len(s)))
	n.buf = append(n.buf, s...)
	n.pad()
}

func (n *ngWriter) optU32(code uint16, v uint32) {
	n.u16(code)
	n.u16(4)
	n.u32(v)
}

func (n *ngWriter) optU64(code uint16, v uint64) {
	n.u16(code)
	n.u16(8)
	n.u64(v)
}

// optTime appends a timestamp option: nanoseconds since the epoch, high word first.
func (n *ngWriter) optTime(code uint16, t time.Time) {
	ns := uint64(t.UnixNano())
	n.u16(code)
	n.u16(8)
	n.u32(uint32(ns >> 32))
	n.u32(uint32(ns))
}

// end closes the options (if any were written after optsAt), sets the block's length
// and writes it.
func (n *ngWriter) end(optsAt int) error {
	if len(n.buf) > optsAt {
		n.u16(optEnd)
		n.u16(0)
	}
	n.u32(0)
	l := uint32(len(n.buf))
	binary.NativeEndian.PutUint32(n.buf[4:], l)
	binary.NativeEndian.PutUint32(n.buf[len(n.buf)-4:], l)
	_, err := n.w.Write(n.buf)
	return err
}

// section writes the section header block.
func (n *ngWriter) section(hardware, os, appl string) error {
	n.begin(blockSHB)
	n.u32(byteOrderMagic)
	n.u16(1)
	n.u16(0)
	n.u64(^uint64(0)) // section length not known
	at := len(n.buf)
	n.optString(optSHBHardware, hardware)
	n.optString(optSHBOS, os)
	n.optString(optSHBUserAppl, appl)
	return n.end(at)
}

// iface writes an interface description block: Ethernet, nanosecond timestamps.
func (n *ngWriter) iface(i ngInterface) error {
	n.begin(blockIDB)
	n.u16(linkTypeEthernet)
	n.u16(0)
	n.u32(i.snaplen)
	at := len(n.buf)
	n.optString(optIfName, i.name)
	n.optString(optIfDescription, i.description)
	if len(i.mac) == 6 {
		n.opt(optIfMACAddr, i.mac)
	}
	if i.speedBps > 0 {
		n.optU64(optIfSpeed, i.speedBps)
	}
	n.opt(optIfTsresol, []byte{9})
	if i.filter != "" {
		n.u16(optIfFilter)
		n.u16(uint16(1 + min(len(i.filter), 0xfffe)))
		n.buf = append(n.buf, 0) // a libpcap filter string
		n.buf = append(n.buf, i.filter[:min(len(i.filter), 0xfffe)]...)
		n.pad()
	}
	n.optString(optIfOS, "Linux")
	n.optString(optIfHardware, i.hardware)
	return n.end(at)
}

// packet writes an enhanced packet block with its direction and queue.
func (n *ngWriter) packet(iface uint32, ns int64, data []byte, origLen uint32, dir uint8, queue uint16) error {
	n.begin(blockEPB)
	n.u32(iface)
	n.u32(uint32(uint64(ns) >> 32))
	n.u32(uint32(ns))
	n.u32(uint32(len(data)))
	n.u32(origLen)
	n.buf = append(n.buf, data...)
	n.pad()
	at := len(n.buf)
	flags := uint32(epbInbound)
	if dir != 0 {
		flags = epbOutbound
	}
	n.optU32(optEPBFlags, flags)
	n.optU32(optEPBQueue, uint32(queue))
	return n.end(at)
}

// stats writes an interface statistics block.
func (n *ngWriter) stats(iface uint32, s ngStats) error {
	ns := uint64(s.end.UnixNano())
	n.begin(blockISB)
	n.u32(iface)
	n.u32(uint32(ns >> 32))
	n.u32(uint32(ns))
	at := len(n.buf)
	n.optString(optComment, s.comment)
	n.optTime(optISBStartTime, s.start)
	n.optTime(optISBEndTime, s.end)
	n.optU64(optISBIfRecv, s.recv)
	n.optU64(optISBIfDrop, s.drop)
	n.optU64(optISBFilterAccept, s.filterAccept)
	n.optU64(optISBUsrDeliv, s.usrDeliv)
	return n.end(at)
}

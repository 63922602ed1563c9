package vfio

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// parseIOVARangeCap walks the capability chain of a VFIO_IOMMU_GET_INFO reply and returns
// the usable IOVA ranges as half-open spans. ok is false when the chain has no IOVA range
// capability (older kernels): then any IOVA is allowed.
func parseIOVARangeCap(info []byte) (ranges []span, ok bool, err error) {
	if len(info) < sizeofType1Info {
		return nil, false, fmt.Errorf("iommu info: %d bytes, want at least %d", len(info), sizeofType1Info)
	}
	ne := binary.NativeEndian
	if ne.Uint32(info[4:])&iommuInfoCaps == 0 {
		return nil, false, nil
	}
	off := ne.Uint32(info[16:])
	for hops := 0; off != 0; hops++ {
		if hops > 64 {
			return nil, false, errors.New("iommu info: capability chain loops")
		}
		if off < sizeofType1Info || uint64(off)+sizeofCapHeader > uint64(len(info)) || off%4 != 0 {
			return nil, false, fmt.Errorf("iommu info: capability at %d outside the %d-byte reply", off, len(info))
		}
		id := ne.Uint16(info[off:])
		next := ne.Uint32(info[off+4:])
		if id == iommuType1InfoCapIOVARange {
			if uint64(off)+sizeofIOVARangeCap > uint64(len(info)) {
				return nil, false, errors.New("iommu info: truncated IOVA range capability")
			}
			n := uint64(ne.Uint32(info[off+8:]))
			first := uint64(off) + sizeofIOVARangeCap
			if first+n*sizeofIOVARange > uint64(len(info)) {
				return nil, false, fmt.Errorf("iommu info: %d IOVA ranges overrun the reply", n)
			}
			for i := uint64(0); i < n; i++ {
				p := first + i*sizeofIOVARange
				s, err := inclusiveSpan(ne.Uint64(info[p:]), ne.Uint64(info[p+8:]))
				if err != nil {
					return nil, false, err
				}
				ranges = append(ranges, s)
			}
			return ranges, true, nil
		}
		if next != 0 && next <= off {
			return nil, false, errors.New("iommu info: capability chain goes backwards")
		}
		off = next
	}
	return nil, false, nil
}

// inclusiveSpan converts the kernel's [start, last] to a half-open span, clamping the
// top of the 64-bit space.
func inclusiveSpan(start, last uint64) (span, error) {
	if last < start {
		return span{}, fmt.Errorf("iommu info: IOVA range [%#x, %#x] ends before it starts", start, last)
	}
	end := last + 1
	if end == 0 {
		end = ^uint64(0) &^ (IOVAGranule - 1)
	}
	return span{start, end}, nil
}

// kernelIOVARanges asks the kernel which IOVAs the container's IOMMU accepts. ok is false
// when the kernel does not say (any IOVA is then allowed). Called with c.mu held.
func (c *Container) kernelIOVARanges() (ranges []span, ok bool, err error) {
	switch c.kind {
	case iommuType1:
		buf := make([]byte, 256)
		for {
			binary.NativeEndian.PutUint32(buf[0:], uint32(len(buf)))
			if err := ioctlType1Info(c.fd, buf); err != nil {
				return nil, false, fmt.Errorf("get IOMMU info: %w", err)
			}
			need := binary.NativeEndian.Uint32(buf[0:])
			if int(need) <= len(buf) {
				return parseIOVARangeCap(buf[:need])
			}
			if need > 1<<20 {
				return nil, false, fmt.Errorf("get IOMMU info: implausible size %d", need)
			}
			buf = make([]byte, need)
		}
	case iommuFD:
		raw := make([]uint64, 2*8)
		for {
			r := ioasIOVARanges{Size: sizeofIOASIOVARange, IOASID: c.ioas, NumIOVAs: uint32(len(raw) / 2)}
			err := ioctlIOASIOVARanges(c.fd, &r, raw)
			if errors.Is(err, unix.EMSGSIZE) && r.NumIOVAs <= 4096 {
				raw = make([]uint64, 2*r.NumIOVAs)
				continue
			}
			if err != nil {
				return nil, false, fmt.Errorf("get IOAS IOVA ranges: %w", err)
			}
			for i := 0; i < int(r.NumIOVAs); i++ {
				s, err := inclusiveSpan(raw[2*i], raw[2*i+1])
				if err != nil {
					return nil, false, err
				}
				ranges = append(ranges, s)
			}
			return ranges, true, nil
		}
	}
	return nil, false, nil
}

// restrictIOVA narrows the IOVA allocator to what the kernel accepts now. Attaching a
// group or a device can only add reserved regions, so the allowed set only shrinks.
// Called with c.mu held.
func (c *Container) restrictIOVA() error {
	ranges, ok, err := c.kernelIOVARanges()
	if err != nil || !ok {
		return err
	}
	c.iova.Restrict(ranges)
	if c.iova.Available() == 0 {
		return fmt.Errorf("no usable IOVA space: kernel allows %v", ranges)
	}
	return nil
}

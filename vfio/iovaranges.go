package vfio

import (
	"encoding/binary"
	"errors"
	"fmt"
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
		end = ^uint64(0) &^ (iovaGranule - 1)
	}
	return span{start, end}, nil
}

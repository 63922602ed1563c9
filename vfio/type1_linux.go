package vfio

import (
	"encoding/binary"
	"fmt"
)

// type1 is the address space of a VFIO container with the type1 IOMMU backend: IOVAs
// from the allocator, mapped with VFIO_IOMMU_MAP_DMA.
type type1 struct {
	translated
	fd int // the container
}

func newType1(containerFD int) (*type1, error) {
	t, err := newTranslated()
	if err != nil {
		return nil, err
	}
	return &type1{translated: t, fd: containerFD}, nil
}

func (t *type1) noIOMMU() bool { return false }

func (t *type1) dmaMap(b []byte) (uint64, error) {
	return t.mapAt(b, func(vaddr, iova, size uint64) error {
		arg := dmaMap{Argsz: uint32(sizeofDMAMap), Flags: dmaMapFlagRead | dmaMapFlagWrite,
			Vaddr: vaddr, IOVA: iova, Size: size}
		return vfioIOMMUMapDMA.do(t.fd, &arg)
	})
}

func (t *type1) dmaUnmap(b []byte, iova uint64) error {
	return t.unmapAt(iova, uint64(len(b)), func(iova, size uint64) (uint64, error) {
		arg := dmaUnmap{Argsz: uint32(sizeofDMAUnmap), IOVA: iova, Size: size}
		err := vfioIOMMUUnmapDMA.do(t.fd, &arg)
		return arg.Size, err
	})
}

// restrict narrows the IOVA space to the ranges VFIO_IOMMU_GET_INFO reports.
func (t *type1) restrict() error { return t.restrictTo(t.kernelRanges()) }

// kernelRanges asks the kernel which IOVAs the container's IOMMU accepts. ok is false
// when the kernel does not say (any IOVA is then allowed).
func (t *type1) kernelRanges() (ranges []span, ok bool, err error) {
	buf := make([]byte, 256)
	for {
		binary.NativeEndian.PutUint32(buf[0:], uint32(len(buf)))
		if err := ioctlType1Info(t.fd, buf); err != nil {
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
}

// close has nothing to release: the container fd belongs to the group backend.
func (t *type1) close() error { return nil }

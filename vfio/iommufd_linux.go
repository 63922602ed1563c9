package vfio

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// iommufd is the device cdev interface: devices (/dev/vfio/devices/vfioN) bind to an
// iommufd (/dev/iommu) and attach to one IOAS, the container's address space.
type iommufd struct {
	translated
	host *pcihost.Host
	path string
	fd   int
	ioas uint32
}

func openIOMMUFD(host *pcihost.Host) (*iommufd, error) {
	path, err := host.Path(pcihost.IOMMUFDDev)
	if err != nil {
		return nil, err
	}
	t, err := newTranslated()
	if err != nil {
		return nil, err
	}
	fd, err := openNode(path)
	if err != nil {
		return nil, err
	}
	a := ioasAlloc{Size: uint32(sizeofIOASAlloc)}
	if err := iommuIOASAlloc.do(fd, &a); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: allocate IOAS: %w", path, err)
	}
	return &iommufd{translated: t, host: host, path: path, fd: fd, ioas: a.OutIOASID}, nil
}

func (f *iommufd) space() dmaSpace { return f }
func (f *iommufd) noIOMMU() bool   { return false }

// attach opens the function's cdev, binds it to the iommufd and attaches it to the IOAS.
func (f *iommufd) attach(addr pci.Addr) (int, error) {
	path, err := f.host.VFIOCdev(addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open VFIO cdev %s: %w", path, err)
	}
	b := bindIOMMUFD{Argsz: uint32(sizeofBindIOMMUFD), IOMMUFD: int32(f.fd)}
	if err := vfioDeviceBindIOMMUFD.do(fd, &b); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: bind to iommufd: %w", path, err)
	}
	a := attachIOMMUFDPT{Argsz: uint32(sizeofAttachIOMMUFDPT), PtID: f.ioas}
	if err := vfioDeviceAttachIOMMUFD.do(fd, &a); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: attach to IOAS %d: %w", path, f.ioas, err)
	}
	return fd, nil
}

func (f *iommufd) dmaMap(b []byte) (uint64, error) {
	return f.mapAt(b, func(vaddr, iova, size uint64) error {
		arg := ioasMap{Size: uint32(sizeofIOASMap), Flags: ioasMapFixedIOVA | ioasMapReadable | ioasMapWriteable,
			IOASID: f.ioas, UserVA: vaddr, Length: size, IOVA: iova}
		return iommuIOASMap.do(f.fd, &arg)
	})
}

func (f *iommufd) dmaUnmap(b []byte, iova uint64) error {
	return f.unmapAt(iova, uint64(len(b)), func(iova, size uint64) (uint64, error) {
		arg := ioasUnmap{Size: uint32(sizeofIOASUnmap), IOASID: f.ioas, IOVA: iova, Length: size}
		err := iommuIOASUnmap.do(f.fd, &arg)
		return arg.Length, err
	})
}

// restrict narrows the IOVA space to the IOAS's ranges (IOMMU_IOAS_IOVA_RANGES).
func (f *iommufd) restrict() error { return f.restrictTo(f.kernelRanges()) }

func (f *iommufd) kernelRanges() (ranges []span, ok bool, err error) {
	raw := make([]uint64, 2*8)
	for {
		r := ioasIOVARanges{Size: sizeofIOASIOVARange, IOASID: f.ioas, NumIOVAs: uint32(len(raw) / 2)}
		err := ioctlIOASIOVARanges(f.fd, &r, raw)
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

// close destroys the IOAS and closes the iommufd. The space and the backend are one
// value here, so the Container's two close calls release it once.
func (f *iommufd) close() error {
	if f.fd < 0 {
		return nil
	}
	var err error
	d := iommuDestroyArg{Size: uint32(sizeofIOMMUDestroy), ID: f.ioas}
	if derr := iommuDestroy.do(f.fd, &d); derr != nil {
		err = fmt.Errorf("destroy IOAS %d: %w", f.ioas, derr)
	}
	err = errors.Join(err, unix.Close(f.fd))
	f.fd = -1
	return err
}

//go:build linux

package vfio

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl issues a VFIO or iommufd ioctl whose argument is a pointer. arg must point to a
// struct from abi.go (or an encoded vfio_irq_set) that lives until the call returns.
func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// do issues request r on fd with arg.
func (r request[T]) do(fd int, arg *T) error { return ioctl(fd, uintptr(r), unsafe.Pointer(arg)) }

// ioctlValue issues an ioctl whose argument is a plain integer and returns its result.
func ioctlValue(fd int, req uintptr, arg uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// ioctlGetDeviceFD asks a group for the device named by its PCI address.
func ioctlGetDeviceFD(groupFD int, name string) (int, error) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return 0, err
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(groupFD), vfioGroupGetDeviceFD, uintptr(unsafe.Pointer(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// ioctlSetIRQs passes an encoded struct vfio_irq_set (see encodeIRQSet).
func ioctlSetIRQs(fd int, set []byte) error {
	return ioctl(fd, vfioDeviceSetIRQs, unsafe.Pointer(unsafe.SliceData(set)))
}

// ioctlType1Info issues VFIO_IOMMU_GET_INFO into buf, which starts with a type1Info whose
// argsz is len(buf).
func ioctlType1Info(fd int, buf []byte) error {
	return ioctl(fd, vfioIOMMUGetInfo, unsafe.Pointer(unsafe.SliceData(buf)))
}

// ioctlIOASIOVARanges issues IOMMU_IOAS_IOVA_RANGES; the kernel fills ranges (pairs of
// start, last) up to len(ranges)/2 entries.
func ioctlIOASIOVARanges(fd int, r *ioasIOVARanges, ranges []uint64) error {
	if len(ranges) > 0 {
		r.AllowedIOVAs = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(ranges))))
	}
	err := ioctl(fd, iommuIOASIOVARanges, unsafe.Pointer(r))
	runtime.KeepAlive(ranges)
	return err
}

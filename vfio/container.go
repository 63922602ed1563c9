package vfio

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dmamem"
	"github.com/uiod/uiod/pci"
)

// iommuKind is what translates a container's DMA.
type iommuKind int

const (
	iommuUnset iommuKind = iota
	iommuType1
	iommuNone // no-IOMMU group: physical addresses
	iommuFD   // iommufd IOAS
)

// Container is one DMA address space shared by the devices opened through it: a VFIO
// container (group interface) or an iommufd IOAS (cdev interface). It is safe for
// concurrent use.
type Container struct {
	opts Options
	host *pci.Host
	log  *zap.Logger
	mode Mode // resolved: ModeGroup or ModeIOMMUFD
	path string

	mu      sync.Mutex
	fd      int // /dev/vfio/vfio or /dev/iommu
	kind    iommuKind
	ioas    uint32
	groups  map[int]int // group number → group fd
	devices map[*Device]struct{}
	iova    *IOVAAllocator
	pagemap *dmamem.Pagemap
	dma     *dmamem.Allocator
	closed  bool
}

// NewContainer opens an empty DMA address space. Devices join it with Open.
func NewContainer(opts Options) (*Container, error) {
	host, err := opts.host()
	if err != nil {
		return nil, err
	}
	c := &Container{
		opts:    opts,
		host:    host,
		log:     opts.log(),
		fd:      -1,
		groups:  make(map[int]int),
		devices: make(map[*Device]struct{}),
		iova:    NewIOVAAllocator(),
	}
	for _, r := range defaultIOVARanges {
		if err := c.iova.AddRange(r[0], r[1]); err != nil {
			return nil, err
		}
	}
	c.mode = opts.Mode
	if c.mode == ModeAuto {
		switch {
		case host.HasDev(pci.VFIOContainerDev):
			c.mode = ModeGroup
		case host.HasDev(pci.IOMMUFDDev):
			c.mode = ModeIOMMUFD
		default:
			return nil, fmt.Errorf("neither %s nor %s exists (load vfio-pci: modprobe vfio-pci): %w",
				host.Root+"/"+pci.VFIOContainerDev, host.Root+"/"+pci.IOMMUFDDev, ErrNoVFIO)
		}
	}
	switch c.mode {
	case ModeGroup:
		if c.path, err = host.Path(pci.VFIOContainerDev); err == nil {
			err = c.openGroupContainer()
		}
	case ModeIOMMUFD:
		if c.path, err = host.Path(pci.IOMMUFDDev); err == nil {
			err = c.openIOMMUFD()
		}
	default:
		err = fmt.Errorf("unknown vfio mode %v", c.mode)
	}
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		return nil, err
	}
	c.dma = dmamem.New(containerMapper{c}, dmamem.Options{HugePages: opts.HugePages, Log: c.log})
	return c, nil
}

func (c *Container) openGroupContainer() error {
	fd, err := unix.Open(c.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %w", err, ErrNoVFIO)
		}
		return fmt.Errorf("open %s: %w", c.path, err)
	}
	c.fd = fd
	v, err := ioctlValue(fd, vfioGetAPIVersion, 0)
	if err != nil {
		return fmt.Errorf("%s is not a VFIO container: get API version: %w", c.path, err)
	}
	if v != vfioAPIVersion {
		return fmt.Errorf("%s: VFIO API version %d, want %d: %w", c.path, v, vfioAPIVersion, ErrNotSupported)
	}
	if !c.hasExtension(vfioType1v2IOMMU) && !c.hasExtension(vfioType1IOMMU) && !c.hasExtension(vfioNoIOMMU) {
		return fmt.Errorf("%s offers neither the type1 nor the no-IOMMU backend (load vfio_iommu_type1): %w", c.path, ErrNotSupported)
	}
	return nil
}

func (c *Container) hasExtension(ext uintptr) bool {
	r, err := ioctlValue(c.fd, vfioCheckExtension, ext)
	return err == nil && r > 0
}

func (c *Container) openIOMMUFD() error {
	fd, err := unix.Open(c.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %w", err, ErrNoVFIO)
		}
		return fmt.Errorf("open %s: %w", c.path, err)
	}
	c.fd = fd
	a := ioasAlloc{Size: uint32(sizeofIOASAlloc)}
	if err := ioctlIOASAlloc(fd, &a); err != nil {
		return fmt.Errorf("%s: allocate IOAS: %w", c.path, err)
	}
	c.ioas = a.OutIOASID
	c.kind = iommuFD
	return nil
}

// DMA returns the allocator of memory that every device of the container can reach.
func (c *Container) DMA() pci.DMA { return c.dma }

// NoIOMMU reports whether the container has no IOMMU translation (a no-IOMMU group):
// devices can reach all of memory, and bus addresses are physical addresses.
func (c *Container) NoIOMMU() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kind == iommuNone
}

// Mode returns the kernel interface the container uses (never ModeAuto).
func (c *Container) Mode() Mode { return c.mode }

// Open opens a function bound to vfio-pci into the container.
func (c *Container) Open(addr pci.Addr) (*Device, error) {
	return c.open(addr, false)
}

func (c *Container) open(addr pci.Addr, owns bool) (*Device, error) {
	if err := c.host.CheckBound(addr, pci.DriverVFIO); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("vfio container closed")
	}
	var fd int
	var err error
	if c.mode == ModeIOMMUFD {
		fd, err = c.bindCdev(addr)
	} else {
		fd, err = c.groupDevice(addr)
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d, err := newDevice(c, addr, fd, owns)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("device %s: %w", addr, err)
	}
	if !c.track(d) {
		// Close ran while the device was opening: it must not outlive the container.
		return nil, errors.Join(errors.New("vfio container closed"), d.quiesce(), d.release())
	}
	return d, nil
}

// track adds an opened device to the container, unless the container was closed
// meanwhile (then Close has dropped its device set and would never quiesce d).
func (c *Container) track(d *Device) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.devices[d] = struct{}{}
	return true
}

// groupDevice adds the function's group to the container (setting the IOMMU type with
// the first group) and returns the device fd. Called with c.mu held.
func (c *Container) groupDevice(addr pci.Addr) (int, error) {
	n, err := c.host.IOMMUGroup(addr)
	if err != nil {
		return -1, fmt.Errorf("device %s: %w", addr, err)
	}
	if n < 0 {
		return -1, fmt.Errorf("device %s has no IOMMU group (IOMMU disabled? for no-IOMMU mode set vfio's enable_unsafe_noiommu_mode before binding)", addr)
	}
	gfd, ok := c.groups[n]
	if !ok {
		gfd, err = c.attachGroup(n)
		if err != nil {
			return -1, err
		}
	}
	fd, err := ioctlGetDeviceFD(gfd, addr.String())
	if err != nil {
		return -1, fmt.Errorf("group %d: get device fd for %s: %w", n, addr, err)
	}
	return fd, nil
}

// attachGroup opens group n, checks that it is viable and adds it to the container.
func (c *Container) attachGroup(n int) (int, error) {
	path, noiommu, err := c.host.VFIOGroupDevice(n)
	if err != nil {
		return -1, fmt.Errorf("VFIO group %d: %w", n, err)
	}
	gfd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open VFIO group %s: %w", path, err)
	}
	fail := func(err error) (int, error) {
		unix.Close(gfd)
		return -1, err
	}
	st := groupStatus{Argsz: uint32(sizeofGroupStatus)}
	if err := ioctlGroupStatus(gfd, &st); err != nil {
		return fail(fmt.Errorf("%s: get group status: %w", path, err))
	}
	if st.Flags&groupFlagsViable == 0 {
		return fail(fmt.Errorf("group %d: %w: every function in it must be bound to vfio-pci or to no driver; members: %s",
			n, ErrNotViable, c.groupMembers(n)))
	}
	switch {
	case c.kind == iommuNone && !noiommu, c.kind == iommuType1 && noiommu:
		return fail(fmt.Errorf("group %s: cannot mix no-IOMMU and IOMMU groups in one container", path))
	}
	if st.Flags&groupFlagsContainerSet == 0 {
		cfd := int32(c.fd)
		if err := ioctlSetContainer(gfd, &cfd); err != nil {
			return fail(fmt.Errorf("%s: set container: %w", path, err))
		}
	}
	if c.kind == iommuUnset {
		if err := c.setIOMMU(noiommu); err != nil {
			return fail(err)
		}
	}
	c.groups[n] = gfd
	c.refreshIOVA()
	return gfd, nil
}

// setIOMMU picks the IOMMU backend once the first group is in the container.
func (c *Container) setIOMMU(noiommu bool) error {
	var types []uintptr
	if noiommu {
		types = []uintptr{vfioNoIOMMU}
	} else {
		types = []uintptr{vfioType1v2IOMMU, vfioType1IOMMU}
	}
	for _, t := range types {
		if !c.hasExtension(t) {
			continue
		}
		if _, err := ioctlValue(c.fd, vfioSetIOMMU, t); err != nil {
			return fmt.Errorf("%s: set IOMMU type %d: %w", c.path, t, err)
		}
		if noiommu {
			pm, err := dmamem.OpenPagemap(c.host.Root)
			if err != nil {
				return err
			}
			c.pagemap = pm
			c.kind = iommuNone
			c.log.Warn("VFIO no-IOMMU mode: the device can DMA anywhere in memory; bus addresses are physical addresses")
		} else {
			c.kind = iommuType1
		}
		return nil
	}
	if noiommu {
		return fmt.Errorf("%s: no-IOMMU group but the container lacks the no-IOMMU extension: %w", c.path, ErrNotSupported)
	}
	return fmt.Errorf("%s: no type1 IOMMU backend (load vfio_iommu_type1): %w", c.path, ErrNotSupported)
}

// refreshIOVA narrows the IOVA allocator to the ranges the kernel reports after a group
// or device joined; without a report the built-in ranges stay. Called with c.mu held.
func (c *Container) refreshIOVA() {
	if err := c.restrictIOVA(); err != nil {
		c.log.Warn("cannot read the IOMMU's usable IOVA ranges; using the built-in ranges", zap.Error(err))
	}
}

// bindCdev opens the function's cdev, binds it to the iommufd and attaches it to the
// container's IOAS. Called with c.mu held.
func (c *Container) bindCdev(addr pci.Addr) (int, error) {
	path, err := c.host.VFIOCdev(addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open VFIO cdev %s: %w", path, err)
	}
	b := bindIOMMUFD{Argsz: uint32(sizeofBindIOMMUFD), IOMMUFD: int32(c.fd)}
	if err := ioctlBindIOMMUFD(fd, &b); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: bind to iommufd: %w", path, err)
	}
	a := attachIOMMUFDPT{Argsz: uint32(sizeofAttachIOMMUFDPT), PtID: c.ioas}
	if err := ioctlAttachIOMMUFDPT(fd, &a); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: attach to IOAS %d: %w", path, c.ioas, err)
	}
	c.refreshIOVA()
	return fd, nil
}

// groupMembers describes the functions of an IOMMU group and their drivers, for the
// not-viable error.
func (c *Container) groupMembers(group int) string {
	members, err := c.host.IOMMUGroupMembers(group)
	if err != nil {
		return "members unknown: " + err.Error()
	}
	var parts []string
	for _, m := range members {
		drv, err := c.host.Driver(m)
		switch {
		case err != nil:
			drv = err.Error()
		case drv == "":
			drv = "no driver"
		}
		parts = append(parts, m.String()+" ("+drv+")")
	}
	return strings.Join(parts, ", ")
}

// containerMapper maps DMA memory into the container's address space.
type containerMapper struct{ c *Container }

// Map gives b an IOVA in the container (or its physical address without an IOMMU).
func (m containerMapper) Map(b []byte) (uint64, error) {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.kind {
	case iommuUnset:
		return 0, errors.New("no device in the VFIO container yet: open a device before allocating DMA memory")
	case iommuNone:
		return c.pagemap.Map(b)
	}
	size := uint64(len(b))
	align := uint64(IOVAGranule)
	if size >= dmamem.HugePageSize {
		align = dmamem.HugePageSize // lets the IOMMU use superpages
	}
	iova, err := c.iova.Alloc(size, align)
	if err != nil {
		return 0, err
	}
	va := uint64(dmamem.VirtAddr(b))
	if c.kind == iommuFD {
		arg := ioasMap{Size: uint32(sizeofIOASMap), Flags: ioasMapFixedIOVA | ioasMapReadable | ioasMapWriteable,
			IOASID: c.ioas, UserVA: va, Length: size, IOVA: iova}
		err = ioctlIOASMap(c.fd, &arg)
	} else {
		arg := dmaMap{Argsz: uint32(sizeofDMAMap), Flags: dmaMapFlagRead | dmaMapFlagWrite, Vaddr: va, IOVA: iova, Size: size}
		err = ioctlMapDMA(c.fd, &arg)
	}
	if err != nil {
		c.iova.Free(iova, size)
		return 0, fmt.Errorf("map %#x bytes at IOVA %#x: %w", size, iova, err)
	}
	return iova, nil
}

// Unmap removes b from the container's IOMMU and frees its IOVA.
func (m containerMapper) Unmap(b []byte, iova uint64) error {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	size := uint64(len(b))
	switch c.kind {
	case iommuNone:
		return nil
	case iommuFD:
		arg := ioasUnmap{Size: uint32(sizeofIOASUnmap), IOASID: c.ioas, IOVA: iova, Length: size}
		if err := ioctlIOASUnmap(c.fd, &arg); err != nil {
			return fmt.Errorf("unmap IOVA %#x: %w", iova, err)
		}
		if arg.Length != size {
			return fmt.Errorf("unmap IOVA %#x: kernel unmapped %#x of %#x bytes", iova, arg.Length, size)
		}
	case iommuType1:
		arg := dmaUnmap{Argsz: uint32(sizeofDMAUnmap), IOVA: iova, Size: size}
		if err := ioctlUnmapDMA(c.fd, &arg); err != nil {
			return fmt.Errorf("unmap IOVA %#x: %w", iova, err)
		}
		if arg.Size != size {
			return fmt.Errorf("unmap IOVA %#x: kernel unmapped %#x of %#x bytes", iova, arg.Size, size)
		}
	default:
		return fmt.Errorf("unmap IOVA %#x: container has no IOMMU", iova)
	}
	return c.iova.Free(iova, size)
}

// Close quiesces every device still open in the container (interrupts off, bus
// mastering off), unmaps and frees all DMA memory, then closes the devices, groups and
// the container. It is safe to call more than once.
func (c *Container) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	devs := make([]*Device, 0, len(c.devices))
	for d := range c.devices {
		devs = append(devs, d)
	}
	c.mu.Unlock()

	var errs []error
	for _, d := range devs {
		errs = append(errs, d.quiesce())
	}
	errs = append(errs, c.dma.Close())
	for _, d := range devs {
		errs = append(errs, d.release())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.devices = nil
	for n, gfd := range c.groups {
		errs = append(errs, unix.Close(gfd))
		delete(c.groups, n)
	}
	if c.kind == iommuFD {
		d := iommuDestroyArg{Size: uint32(sizeofIOMMUDestroy), ID: c.ioas}
		if err := ioctlIOMMUDestroy(c.fd, &d); err != nil {
			errs = append(errs, fmt.Errorf("destroy IOAS %d: %w", c.ioas, err))
		}
	}
	if c.pagemap != nil {
		errs = append(errs, c.pagemap.Close())
	}
	if c.fd >= 0 {
		errs = append(errs, unix.Close(c.fd))
		c.fd = -1
	}
	return errors.Join(errs...)
}

// forget removes a closed device from the container.
func (c *Container) forget(d *Device) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, d)
}

package vfio

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// groupBackend is the VFIO group interface: a container (/dev/vfio/vfio) that IOMMU
// groups (/dev/vfio/N, or /dev/vfio/noiommu-N) join. The first group picks the IOMMU
// backend: type1 for a real group, no-IOMMU for a noiommu one.
type groupBackend struct {
	host   *pcihost.Host
	log    *zap.Logger
	path   string
	fd     int         // the container
	groups map[int]int // group number → group fd
	dma    dmaSpace    // nil until the first group joined
}

func openGroupBackend(host *pcihost.Host, log *zap.Logger) (*groupBackend, error) {
	path, err := host.Path(pcihost.VFIOContainerDev)
	if err != nil {
		return nil, err
	}
	fd, err := openNode(path)
	if err != nil {
		return nil, err
	}
	g := &groupBackend{host: host, log: log, path: path, fd: fd, groups: make(map[int]int)}
	v, err := ioctlValue(fd, vfioGetAPIVersion, 0)
	switch {
	case err != nil:
		err = fmt.Errorf("%s is not a VFIO container: get API version: %w", path, err)
	case v != vfioAPIVersion:
		err = fmt.Errorf("%s: VFIO API version %d, want %d: %w", path, v, vfioAPIVersion, pci.ErrNotSupported)
	case !g.hasExtension(vfioType1v2IOMMU) && !g.hasExtension(vfioType1IOMMU) && !g.hasExtension(vfioNoIOMMU):
		err = fmt.Errorf("%s offers neither the type1 nor the no-IOMMU backend (load vfio_iommu_type1): %w", path, pci.ErrNotSupported)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return g, nil
}

func (g *groupBackend) hasExtension(ext uintptr) bool {
	r, err := ioctlValue(g.fd, vfioCheckExtension, ext)
	return err == nil && r > 0
}

func (g *groupBackend) space() dmaSpace { return g.dma }

// attach adds the function's group to the container (setting the IOMMU type with the
// first group) and returns the device fd.
func (g *groupBackend) attach(addr pci.Addr) (int, error) {
	n, err := g.host.IOMMUGroup(addr)
	if err != nil {
		return -1, fmt.Errorf("device %s: %w", addr, err)
	}
	if n < 0 {
		return -1, fmt.Errorf("device %s has no IOMMU group (IOMMU disabled? for no-IOMMU mode set vfio's enable_unsafe_noiommu_mode before binding)", addr)
	}
	gfd, ok := g.groups[n]
	if !ok {
		if gfd, err = g.attachGroup(n); err != nil {
			return -1, err
		}
	}
	fd, err := ioctlGetDeviceFD(gfd, addr.String())
	if err != nil && ok && errors.Is(err, unix.ENODEV) {
		fd, err = g.reattach(n, gfd, addr)
	}
	if err != nil {
		return -1, fmt.Errorf("group %d: get device fd for %s: %w", n, addr, err)
	}
	return fd, nil
}

// reattach replaces the cached group n, whose fd stale no longer knows addr: the function
// was removed and has come back (a rescan, a hot-plug), and its group is a new one even
// under the same number. The new group joins the container before the stale one is
// closed, so the container never loses its last group and, with it, its DMA mappings.
func (g *groupBackend) reattach(n, stale int, addr pci.Addr) (int, error) {
	delete(g.groups, n)
	gfd, err := g.attachGroup(n)
	if err != nil {
		g.groups[n] = stale
		return -1, err
	}
	unix.Close(stale)
	g.log.Info("VFIO group re-attached: its function came back", zap.Int("group", n), zap.Stringer("pci", addr))
	return ioctlGetDeviceFD(gfd, addr.String())
}

// attachGroup opens group n, checks that it is viable and adds it to the container.
func (g *groupBackend) attachGroup(n int) (int, error) {
	path, noiommu, err := g.host.VFIOGroupDevice(n)
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
	if err := vfioGroupGetStatus.do(gfd, &st); err != nil {
		return fail(fmt.Errorf("%s: get group status: %w", path, err))
	}
	if st.Flags&groupFlagsViable == 0 {
		return fail(fmt.Errorf("group %d: %w: every function in it must be bound to vfio-pci or to no driver; members: %s",
			n, ErrNotViable, groupMembers(g.host, n)))
	}
	if g.dma != nil && g.dma.noIOMMU() != noiommu {
		return fail(fmt.Errorf("group %s: cannot mix no-IOMMU and IOMMU groups in one container", path))
	}
	if st.Flags&groupFlagsContainerSet == 0 {
		cfd := int32(g.fd)
		if err := vfioGroupSetContainer.do(gfd, &cfd); err != nil {
			return fail(fmt.Errorf("%s: set container: %w", path, err))
		}
	}
	if g.dma == nil {
		if err := g.setIOMMU(noiommu); err != nil {
			return fail(err)
		}
	}
	g.groups[n] = gfd
	return gfd, nil
}

// setIOMMU picks the IOMMU backend once the first group is in the container.
func (g *groupBackend) setIOMMU(noiommu bool) error {
	types := []uintptr{vfioType1v2IOMMU, vfioType1IOMMU}
	if noiommu {
		types = []uintptr{vfioNoIOMMU}
	}
	for _, t := range types {
		if !g.hasExtension(t) {
			continue
		}
		if _, err := ioctlValue(g.fd, vfioSetIOMMU, t); err != nil {
			return fmt.Errorf("%s: set IOMMU type %d: %w", g.path, t, err)
		}
		if noiommu {
			s, err := newNoIOMMU(g.host)
			if err != nil {
				return err
			}
			g.dma = s
			g.log.Warn("VFIO no-IOMMU mode: the device can DMA anywhere in memory; bus addresses are physical addresses")
			return nil
		}
		s, err := newType1(g.fd)
		if err != nil {
			return err
		}
		g.dma = s
		return nil
	}
	if noiommu {
		return fmt.Errorf("%s: no-IOMMU group but the container lacks the no-IOMMU extension: %w", g.path, pci.ErrNotSupported)
	}
	return fmt.Errorf("%s: no type1 IOMMU backend (load vfio_iommu_type1): %w", g.path, pci.ErrNotSupported)
}

// close closes the groups and the container.
func (g *groupBackend) close() error {
	var errs []error
	for n, gfd := range g.groups {
		errs = append(errs, unix.Close(gfd))
		delete(g.groups, n)
	}
	if g.fd >= 0 {
		errs = append(errs, unix.Close(g.fd))
		g.fd = -1
	}
	return errors.Join(errs...)
}

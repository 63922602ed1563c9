package pcitest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// SRIOV describes the SR-IOV capability of a fixture physical function.
type SRIOV struct {
	// TotalVFs is sriov_totalvfs.
	TotalVFs int
	// Offset and Stride place VF i at routing id PF + Offset + i*Stride (the 82576 has
	// 0x80 and 2: PF 0000:03:00.0 has VFs 0000:03:10.0, 0000:03:10.2, ...).
	Offset, Stride int
	// Vendor and Device are the VFs' ids (sriov_vf_device is Device).
	Vendor, Device uint16
	// Driver is the driver the kernel probes a new VF with, "" for none (as with
	// sriov_drivers_autoprobe 0 or no VF driver loaded).
	Driver string
	// IOMMUGroup is the group of VF 0; VF i is in group IOMMUGroup+i. 0: no groups.
	IOMMUGroup int
	// MSIXVectors is each VF's MSI-X table size.
	MSIXVectors int
}

// AddSRIOV gives the function pf (already added) the SR-IOV attributes of s, with no VFs
// yet. A write to its sriov_numvfs through the tree's Kernel creates or removes VFs as
// Linux does; SetVFs does it directly.
func (tr *Tree) AddSRIOV(pf string, s SRIOV) {
	tr.t.Helper()
	dev := devicePath(pf)
	for name, v := range map[string]string{
		"sriov_totalvfs":          strconv.Itoa(s.TotalVFs),
		"sriov_numvfs":            "0",
		"sriov_offset":            strconv.Itoa(s.Offset),
		"sriov_stride":            strconv.Itoa(s.Stride),
		"sriov_vf_device":         fmt.Sprintf("%04x", s.Device),
		"sriov_drivers_autoprobe": "1",
	} {
		tr.WriteFile(dev+"/"+name, v+"\n")
	}
	if tr.sriov == nil {
		tr.sriov, tr.numVFs = map[string]SRIOV{}, map[string]int{}
	}
	tr.sriov[pf] = s
}

// VFAddr returns the address of VF i of pf, by its offset and stride.
func (tr *Tree) VFAddr(pf string, i int) string {
	s := tr.sriov[pf]
	var dom, bus, devno, fn int
	if _, err := fmt.Sscanf(pf, "%04x:%02x:%02x.%1x", &dom, &bus, &devno, &fn); err != nil {
		tr.t.Fatalf("pcitest: VF of %q: %v", pf, err)
	}
	rid := bus<<8 | devno<<3 | fn + s.Offset + i*s.Stride
	return fmt.Sprintf("%04x:%02x:%02x.%x", dom, rid>>8&0xff, rid>>3&0x1f, rid&7)
}

// NumVFs returns how many VFs pf has (what the kernel holds, whatever was last written
// to the sriov_numvfs file).
func (tr *Tree) NumVFs(pf string) int { return tr.numVFs[pf] }

// SetVFs gives pf n VFs as the kernel does on a write to sriov_numvfs: from 0 to n (each
// VF a function with its physfn link, the PF's virtfnN link, reset and reset_method
// flr, vendor and device id ffff in config space, bound to the SR-IOV's Driver) or from n to 0. Any other change is EBUSY, more
// than TotalVFs ERANGE, as in Linux.
func (tr *Tree) SetVFs(pf string, n int) error {
	s, ok := tr.sriov[pf]
	if !ok {
		return syscall.ENOENT
	}
	cur := tr.NumVFs(pf)
	switch {
	case n == cur:
		return nil
	case n < 0 || n > s.TotalVFs:
		return syscall.ERANGE
	case n != 0 && cur != 0:
		return syscall.EBUSY
	}
	dev := devicePath(pf)
	if n == 0 {
		for i := range cur {
			if err := tr.removeVF(pf, i); err != nil {
				return err
			}
		}
		tr.numVFs[pf] = 0
		return os.WriteFile(tr.Path(dev+"/sriov_numvfs"), []byte("0\n"), 0o644)
	}
	tr.numVFs[pf] = n
	if err := os.WriteFile(tr.Path(dev+"/sriov_numvfs"), []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return err
	}
	for i := range n {
		vf := tr.VFAddr(pf, i)
		group := 0
		if s.IOMMUGroup > 0 {
			group = s.IOMMUGroup + i
		}
		// A VF's vendor and device id registers read ffff (SR-IOV): its ids are in the PF's
		// capability, and sysfs's vendor and device files show those.
		cfg := ConfigSpace(s.Vendor, s.Device, 0x020000, 0x01, s.MSIXVectors)
		copy(cfg, []byte{0xff, 0xff, 0xff, 0xff})
		tr.AddFunction(Function{Addr: vf, Vendor: s.Vendor, Device: s.Device, SubVendor: s.Vendor, SubDevice: s.Device,
			Class: 0x020000, Revision: 0x01, Driver: s.Driver, IOMMUGroup: group, NUMANode: -1, MSIXVectors: s.MSIXVectors,
			Files: map[string]string{"reset": "", "reset_method": "flr\n", "config": string(cfg)}})
		tr.must(tr.symlink(devicePath(vf)+"/physfn", dev))
		tr.must(tr.symlink(dev+"/virtfn"+strconv.Itoa(i), devicePath(vf)))
	}
	return nil
}

// removeVF removes VF i of pf: its links, driver, group and directory.
func (tr *Tree) removeVF(pf string, i int) error {
	vf := tr.VFAddr(pf, i)
	if drv := tr.Driver(vf); drv != "" {
		if err := tr.unlinkDriver(vf, drv); err != nil {
			return err
		}
	}
	if t, err := os.Readlink(tr.Path(devicePath(vf) + "/iommu_group")); err == nil {
		g := t[strings.LastIndex(t, "/")+1:]
		if err := os.RemoveAll(tr.Path("sys/kernel/iommu_groups/" + g)); err != nil {
			return err
		}
	}
	for _, rel := range []string{devicePath(pf) + "/virtfn" + strconv.Itoa(i), "sys/bus/pci/devices/" + vf, devicePath(vf)} {
		if err := os.RemoveAll(tr.Path(rel)); err != nil {
			return err
		}
	}
	delete(tr.native, vf)
	return nil
}

// IGB82576VFs is the SR-IOV of an 82576 on Linux's igb as QEMU's igb shows it: VFs
// 8086:10ca at offset 0x80, stride 2, 3 MSI-X vectors each, in IOMMU groups from 20,
// probed by no driver (a kernel without igbvf); sriov_totalvfs is 7, igb's cap for the
// 82576, although the device's capability offers 8.
var IGB82576VFs = SRIOV{TotalVFs: 7, Offset: 0x80, Stride: 2, Vendor: 0x8086, Device: 0x10ca, IOMMUGroup: 20, MSIXVectors: 3}

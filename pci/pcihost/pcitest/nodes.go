package pcitest

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Resource flags of the sysfs resource file (linux/ioport.h).
const (
	ResourceIO  = 0x100
	ResourceMem = 0x200
)

// BAR is one base address register of a fixture function.
type BAR struct {
	// Start is the bus address; Size 0 means the BAR is not implemented.
	Start, Size uint64
	// Flags are the resource flags (ResourceMem or ResourceIO, plus any others).
	Flags uint64
}

// SetBARs writes a function's resource file (six BARs and an expansion ROM line) and a
// resourceN file of the BAR's size for each implemented BAR, as sysfs has them.
func (tr *Tree) SetBARs(addr string, bars ...BAR) {
	tr.t.Helper()
	var b strings.Builder
	for i := 0; i < 7; i++ {
		var r BAR
		if i < len(bars) {
			r = bars[i]
		}
		end := uint64(0)
		if r.Size > 0 {
			end = r.Start + r.Size - 1
			tr.WriteFile(devicePath(addr)+"/resource"+strconv.Itoa(i), string(make([]byte, r.Size)))
		}
		fmt.Fprintf(&b, "0x%016x 0x%016x 0x%016x\n", r.Start, end, r.Flags)
	}
	tr.WriteFile(devicePath(addr)+"/resource", b.String())
}

// AddReset gives a function the sysfs reset attribute.
func (tr *Tree) AddReset(addr string) {
	tr.WriteFile(devicePath(addr)+"/reset", "")
}

// AddUIO makes a function look bound to a UIO driver with device uio<n>: its uio/uio<n>
// directory, and dev/uio<n> — a regular file holding a 4-byte interrupt count, standing
// in for the character device.
func (tr *Tree) AddUIO(addr string, n, count int) {
	tr.t.Helper()
	name := "uio" + strconv.Itoa(n)
	tr.mkdir(devicePath(addr) + "/uio/" + name)
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(count))
	tr.WriteFile("dev/"+name, string(b[:]))
}

// AddVFIOContainer creates dev/vfio/vfio (an empty regular file standing in for the
// container node).
func (tr *Tree) AddVFIOContainer() { tr.WriteFile("dev/vfio/vfio", "") }

// AddIOMMUFD creates dev/iommu (an empty regular file standing in for the iommufd node).
func (tr *Tree) AddIOMMUFD() { tr.WriteFile("dev/iommu", "") }

// AddVFIOGroup creates the node of an IOMMU group: dev/vfio/<group>, or
// dev/vfio/noiommu-<group> for a group of vfio's no-IOMMU mode.
func (tr *Tree) AddVFIOGroup(group int, noIOMMU bool) {
	name := strconv.Itoa(group)
	if noIOMMU {
		name = "noiommu-" + name
	}
	tr.WriteFile("dev/vfio/"+name, "")
}

// AddVFIOCdev gives a function the VFIO device cdev vfio<n>: its vfio-dev/vfio<n>
// directory and dev/vfio/devices/vfio<n>.
func (tr *Tree) AddVFIOCdev(addr string, n int) {
	tr.t.Helper()
	name := "vfio" + strconv.Itoa(n)
	tr.mkdir(devicePath(addr) + "/vfio-dev/" + name)
	tr.WriteFile("dev/vfio/devices/"+name, "")
}

// Command returns the command register of a function's config file.
func (tr *Tree) Command(addr string) uint16 {
	tr.t.Helper()
	b := tr.ReadFile(devicePath(addr) + "/config")
	if len(b) < 6 {
		tr.t.Fatalf("pcitest: %s config is %d bytes", addr, len(b))
	}
	return binary.LittleEndian.Uint16([]byte(b[4:6]))
}

// SetCommand writes the command register of a function's config file in place.
func (tr *Tree) SetCommand(addr string, v uint16) {
	tr.t.Helper()
	b := []byte(tr.ReadFile(devicePath(addr) + "/config"))
	if len(b) < 6 {
		tr.t.Fatalf("pcitest: %s config is %d bytes", addr, len(b))
	}
	binary.LittleEndian.PutUint16(b[4:], v)
	tr.WriteFile(devicePath(addr)+"/config", string(b))
}

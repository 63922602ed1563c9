package vfio

import (
	"testing"
	"unsafe"
)

// Sizes and offsets from linux/vfio.h and linux/iommufd.h (x86-64, kernel 6.12).
func TestABISizes(t *testing.T) {
	// size is the Go struct's, argsz the constant the code passes as its argsz, want the
	// kernel's.
	tests := []struct {
		name              string
		size, argsz, want uintptr
	}{
		{"vfio_group_status", unsafe.Sizeof(groupStatus{}), sizeofGroupStatus, 8},
		{"vfio_device_info", unsafe.Sizeof(deviceInfo{}), sizeofDeviceInfo, 24},
		{"vfio_region_info", unsafe.Sizeof(regionInfo{}), sizeofRegionInfo, 32},
		{"vfio_irq_info", unsafe.Sizeof(irqInfo{}), sizeofIRQInfo, 16},
		{"vfio_iommu_type1_dma_map", unsafe.Sizeof(dmaMap{}), sizeofDMAMap, 32},
		{"vfio_iommu_type1_dma_unmap", unsafe.Sizeof(dmaUnmap{}), sizeofDMAUnmap, 24},
		{"vfio_iommu_type1_info", unsafe.Sizeof(type1Info{}), sizeofType1Info, 24},
		{"vfio_device_bind_iommufd", unsafe.Sizeof(bindIOMMUFD{}), sizeofBindIOMMUFD, 16},
		{"vfio_device_attach_iommufd_pt", unsafe.Sizeof(attachIOMMUFDPT{}), sizeofAttachIOMMUFDPT, 12},
		{"vfio_device_detach_iommufd_pt", unsafe.Sizeof(detachIOMMUFDPT{}), sizeofDetachIOMMUFDPT, 8},
		{"iommu_destroy", unsafe.Sizeof(iommuDestroyArg{}), sizeofIOMMUDestroy, 8},
		{"iommu_ioas_alloc", unsafe.Sizeof(ioasAlloc{}), sizeofIOASAlloc, 12},
		{"iommu_ioas_map", unsafe.Sizeof(ioasMap{}), sizeofIOASMap, 40},
		{"iommu_ioas_unmap", unsafe.Sizeof(ioasUnmap{}), sizeofIOASUnmap, 24},
	}
	for _, tt := range tests {
		if tt.size != tt.want || tt.argsz != tt.want {
			t.Errorf("%s: size %d, argsz %d, want %d", tt.name, tt.size, tt.argsz, tt.want)
		}
	}
}

func TestABIOffsets(t *testing.T) {
	var ri regionInfo
	var dm dmaMap
	var du dmaUnmap
	var im ioasMap
	var iu ioasUnmap
	var di deviceInfo
	var bi bindIOMMUFD
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"vfio_region_info.index", unsafe.Offsetof(ri.Index), 8},
		{"vfio_region_info.size", unsafe.Offsetof(ri.Size), 16},
		{"vfio_region_info.offset", unsafe.Offsetof(ri.Offset), 24},
		{"vfio_device_info.num_irqs", unsafe.Offsetof(di.NumIRQs), 12},
		{"vfio_device_info.cap_offset", unsafe.Offsetof(di.CapOffset), 16},
		{"vfio_iommu_type1_dma_map.vaddr", unsafe.Offsetof(dm.Vaddr), 8},
		{"vfio_iommu_type1_dma_map.iova", unsafe.Offsetof(dm.IOVA), 16},
		{"vfio_iommu_type1_dma_map.size", unsafe.Offsetof(dm.Size), 24},
		{"vfio_iommu_type1_dma_unmap.iova", unsafe.Offsetof(du.IOVA), 8},
		{"vfio_iommu_type1_dma_unmap.size", unsafe.Offsetof(du.Size), 16},
		{"vfio_device_bind_iommufd.iommufd", unsafe.Offsetof(bi.IOMMUFD), 8},
		{"vfio_device_bind_iommufd.out_devid", unsafe.Offsetof(bi.OutDevID), 12},
		{"iommu_ioas_map.ioas_id", unsafe.Offsetof(im.IOASID), 8},
		{"iommu_ioas_map.user_va", unsafe.Offsetof(im.UserVA), 16},
		{"iommu_ioas_map.length", unsafe.Offsetof(im.Length), 24},
		{"iommu_ioas_map.iova", unsafe.Offsetof(im.IOVA), 32},
		{"iommu_ioas_unmap.iova", unsafe.Offsetof(iu.IOVA), 8},
		{"iommu_ioas_unmap.length", unsafe.Offsetof(iu.Length), 16},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: offset %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// ioctl numbers as the kernel headers compute them (_IO(';', VFIO_BASE + n) and
// _IO(';', IOMMUFD_CMD_*)).
func TestIoctlNumbers(t *testing.T) {
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"VFIO_GET_API_VERSION", vfioGetAPIVersion, 0x3B64},
		{"VFIO_CHECK_EXTENSION", vfioCheckExtension, 0x3B65},
		{"VFIO_SET_IOMMU", vfioSetIOMMU, 0x3B66},
		{"VFIO_GROUP_GET_STATUS", uintptr(vfioGroupGetStatus), 0x3B67},
		{"VFIO_GROUP_SET_CONTAINER", uintptr(vfioGroupSetContainer), 0x3B68},
		{"VFIO_GROUP_UNSET_CONTAINER", vfioGroupUnsetContainer, 0x3B69},
		{"VFIO_GROUP_GET_DEVICE_FD", vfioGroupGetDeviceFD, 0x3B6A},
		{"VFIO_DEVICE_GET_INFO", uintptr(vfioDeviceGetInfo), 0x3B6B},
		{"VFIO_DEVICE_GET_REGION_INFO", uintptr(vfioDeviceGetRegionInfo), 0x3B6C},
		{"VFIO_DEVICE_GET_IRQ_INFO", uintptr(vfioDeviceGetIRQInfo), 0x3B6D},
		{"VFIO_DEVICE_SET_IRQS", vfioDeviceSetIRQs, 0x3B6E},
		{"VFIO_DEVICE_RESET", vfioDeviceReset, 0x3B6F},
		{"VFIO_IOMMU_GET_INFO", vfioIOMMUGetInfo, 0x3B70},
		{"VFIO_IOMMU_MAP_DMA", uintptr(vfioIOMMUMapDMA), 0x3B71},
		{"VFIO_IOMMU_UNMAP_DMA", uintptr(vfioIOMMUUnmapDMA), 0x3B72},
		{"VFIO_DEVICE_BIND_IOMMUFD", uintptr(vfioDeviceBindIOMMUFD), 0x3B76},
		{"VFIO_DEVICE_ATTACH_IOMMUFD_PT", uintptr(vfioDeviceAttachIOMMUFD), 0x3B77},
		{"VFIO_DEVICE_DETACH_IOMMUFD_PT", vfioDeviceDetachIOMMUFD, 0x3B78},
		{"IOMMU_DESTROY", uintptr(iommuDestroy), 0x3B80},
		{"IOMMU_IOAS_ALLOC", uintptr(iommuIOASAlloc), 0x3B81},
		{"IOMMU_IOAS_MAP", uintptr(iommuIOASMap), 0x3B85},
		{"IOMMU_IOAS_UNMAP", uintptr(iommuIOASUnmap), 0x3B86},
		{"VFIO_TYPE1_IOMMU", vfioType1IOMMU, 1},
		{"VFIO_TYPE1v2_IOMMU", vfioType1v2IOMMU, 3},
		{"VFIO_NOIOMMU_IOMMU", vfioNoIOMMU, 8},
		{"VFIO_PCI_CONFIG_REGION_INDEX", vfioPCIConfigRegionIndex, 7},
		{"VFIO_IRQ_SET_DATA_EVENTFD", irqSetDataEventfd, 4},
		{"VFIO_IRQ_SET_ACTION_UNMASK", irqSetActionUnmask, 0x10},
		{"VFIO_IRQ_SET_ACTION_TRIGGER", irqSetActionTrig, 0x20},
		{"VFIO_REGION_INFO_FLAG_MMAP", regionInfoFlagMmap, 4},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
}

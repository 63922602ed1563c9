package vfio

// Kernel ABI of linux/vfio.h and linux/iommufd.h: ioctl numbers, flags and the argument
// structs, laid out exactly as the kernel's (abi_test.go checks sizes and offsets). All
// VFIO and iommufd ioctls are _IO(';', n): type 0x3B in bits 15:8, n in bits 7:0, no size
// or direction bits.
const (
	vfioType = 0x3B // ';'
	vfioBase = 100

	vfioAPIVersion = 0 // VFIO_API_VERSION

	vfioGetAPIVersion                                 = vfioType<<8 | (vfioBase + 0)  // 0x3B64
	vfioCheckExtension                                = vfioType<<8 | (vfioBase + 1)  // 0x3B65
	vfioSetIOMMU                                      = vfioType<<8 | (vfioBase + 2)  // 0x3B66
	vfioGroupGetStatus       request[groupStatus]     = vfioType<<8 | (vfioBase + 3)  // 0x3B67
	vfioGroupSetContainer    request[int32]           = vfioType<<8 | (vfioBase + 4)  // 0x3B68
	vfioGroupUnsetContainer                           = vfioType<<8 | (vfioBase + 5)  // 0x3B69
	vfioGroupGetDeviceFD                              = vfioType<<8 | (vfioBase + 6)  // 0x3B6A
	vfioDeviceGetInfo        request[deviceInfo]      = vfioType<<8 | (vfioBase + 7)  // 0x3B6B
	vfioDeviceGetRegionInfo  request[regionInfo]      = vfioType<<8 | (vfioBase + 8)  // 0x3B6C
	vfioDeviceGetIRQInfo     request[irqInfo]         = vfioType<<8 | (vfioBase + 9)  // 0x3B6D
	vfioDeviceSetIRQs                                 = vfioType<<8 | (vfioBase + 10) // 0x3B6E
	vfioDeviceReset                                   = vfioType<<8 | (vfioBase + 11) // 0x3B6F
	vfioIOMMUGetInfo                                  = vfioType<<8 | (vfioBase + 12) // 0x3B70
	vfioIOMMUMapDMA          request[dmaMap]          = vfioType<<8 | (vfioBase + 13) // 0x3B71
	vfioIOMMUUnmapDMA        request[dmaUnmap]        = vfioType<<8 | (vfioBase + 14) // 0x3B72
	vfioDeviceBindIOMMUFD    request[bindIOMMUFD]     = vfioType<<8 | (vfioBase + 18) // 0x3B76
	vfioDeviceAttachIOMMUFD  request[attachIOMMUFDPT] = vfioType<<8 | (vfioBase + 19) // 0x3B77
	vfioDeviceDetachIOMMUFD                           = vfioType<<8 | (vfioBase + 20) // 0x3B78
	iommufdBase                                       = 0x80
	iommuDestroy             request[iommuDestroyArg] = vfioType<<8 | (iommufdBase + 0) // 0x3B80
	iommuIOASAlloc           request[ioasAlloc]       = vfioType<<8 | (iommufdBase + 1) // 0x3B81
	iommuIOASMap             request[ioasMap]         = vfioType<<8 | (iommufdBase + 5) // 0x3B85
	iommuIOASUnmap           request[ioasUnmap]       = vfioType<<8 | (iommufdBase + 6) // 0x3B86
	vfioPCIConfigRegionIndex                          = 7
	vfioPCINumRegions                                 = 9 // BAR0-5, ROM, CONFIG, VGA
)

// request is an ioctl request number whose argument is a pointer to a T (one of the
// structs below): the type ties each request to its argument.
type request[T any] uintptr

// IOMMU types (CHECK_EXTENSION, SET_IOMMU).
const (
	vfioType1IOMMU   = 1
	vfioType1v2IOMMU = 3
	vfioNoIOMMU      = 8
)

// Flags.
const (
	groupFlagsViable       = 1 << 0
	groupFlagsContainerSet = 1 << 1

	deviceFlagsReset = 1 << 0
	deviceFlagsPCI   = 1 << 1

	regionInfoFlagRead  = 1 << 0
	regionInfoFlagWrite = 1 << 1
	regionInfoFlagMmap  = 1 << 2

	irqInfoEventfd = 1 << 0

	irqSetDataNone     = 1 << 0
	irqSetDataBool     = 1 << 1
	irqSetDataEventfd  = 1 << 2
	irqSetActionMask   = 1 << 3
	irqSetActionUnmask = 1 << 4
	irqSetActionTrig   = 1 << 5

	dmaMapFlagRead  = 1 << 0
	dmaMapFlagWrite = 1 << 1

	ioasMapFixedIOVA = 1 << 0
	ioasMapWriteable = 1 << 1
	ioasMapReadable  = 1 << 2
)

// struct vfio_group_status
type groupStatus struct {
	Argsz uint32
	Flags uint32
}

// struct vfio_device_info
type deviceInfo struct {
	Argsz      uint32
	Flags      uint32
	NumRegions uint32
	NumIRQs    uint32
	CapOffset  uint32
	Pad        uint32
}

// struct vfio_region_info
type regionInfo struct {
	Argsz     uint32
	Flags     uint32
	Index     uint32
	CapOffset uint32
	Size      uint64
	Offset    uint64
}

// struct vfio_irq_info
type irqInfo struct {
	Argsz uint32
	Flags uint32
	Index uint32
	Count uint32
}

// irqSetHeaderSize is sizeof(struct vfio_irq_set): argsz, flags, index, start, count,
// followed by a variable-length data array (s32 eventfds for DATA_EVENTFD).
const irqSetHeaderSize = 20

// struct vfio_iommu_type1_dma_map
type dmaMap struct {
	Argsz uint32
	Flags uint32
	Vaddr uint64
	IOVA  uint64
	Size  uint64
}

// struct vfio_iommu_type1_dma_unmap (without the trailing bitmap data)
type dmaUnmap struct {
	Argsz uint32
	Flags uint32
	IOVA  uint64
	Size  uint64
}

// struct vfio_device_bind_iommufd (the 6.x layout; later kernels accept it by argsz)
type bindIOMMUFD struct {
	Argsz    uint32
	Flags    uint32
	IOMMUFD  int32
	OutDevID uint32
}

// struct vfio_device_attach_iommufd_pt (without the later pasid field)
type attachIOMMUFDPT struct {
	Argsz uint32
	Flags uint32
	PtID  uint32
}

// struct vfio_device_detach_iommufd_pt
type detachIOMMUFDPT struct {
	Argsz uint32
	Flags uint32
}

// struct iommu_destroy
type iommuDestroyArg struct {
	Size uint32
	ID   uint32
}

// struct iommu_ioas_alloc
type ioasAlloc struct {
	Size      uint32
	Flags     uint32
	OutIOASID uint32
}

// struct iommu_ioas_map
type ioasMap struct {
	Size     uint32
	Flags    uint32
	IOASID   uint32
	Reserved uint32
	UserVA   uint64
	Length   uint64
	IOVA     uint64
}

// struct iommu_ioas_unmap
type ioasUnmap struct {
	Size   uint32
	IOASID uint32
	IOVA   uint64
	Length uint64
}

// Argument sizes passed in argsz/size fields (abi_test.go checks them against the
// kernel's, and against the Go structs).
const (
	sizeofGroupStatus     = 8
	sizeofDeviceInfo      = 24
	sizeofRegionInfo      = 32
	sizeofIRQInfo         = 16
	sizeofDMAMap          = 32
	sizeofDMAUnmap        = 24
	sizeofBindIOMMUFD     = 16
	sizeofAttachIOMMUFDPT = 12
	sizeofDetachIOMMUFDPT = 8
	sizeofIOMMUDestroy    = 8
	sizeofIOASAlloc       = 12
	sizeofIOASMap         = 40
	sizeofIOASUnmap       = 24
)

// IOVA range discovery: VFIO_IOMMU_GET_INFO (type1) with its capability chain, and
// IOMMU_IOAS_IOVA_RANGES (iommufd).
const (
	iommuIOASIOVARanges = vfioType<<8 | (iommufdBase + 4) // 0x3B84

	iommuInfoPgSizes = 1 << 0
	iommuInfoCaps    = 1 << 1

	iommuType1InfoCapIOVARange = 1 // VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE

	sizeofType1Info     = 24 // struct vfio_iommu_type1_info
	sizeofCapHeader     = 8  // struct vfio_info_cap_header: id u16, version u16, next u32
	sizeofIOVARangeCap  = 16 // header + nr_iovas u32 + reserved u32, then the ranges
	sizeofIOVARange     = 16 // struct vfio_iova_range / iommu_iova_range: start, end (inclusive)
	sizeofIOASIOVARange = 32 // struct iommu_ioas_iova_ranges
)

// struct vfio_iommu_type1_info
type type1Info struct {
	Argsz      uint32
	Flags      uint32
	IOVAPgsize uint64
	CapOffset  uint32
	Pad        uint32
}

// struct iommu_ioas_iova_ranges
type ioasIOVARanges struct {
	Size             uint32
	IOASID           uint32
	NumIOVAs         uint32
	Reserved         uint32
	AllowedIOVAs     uint64 // pointer to []struct iommu_iova_range
	OutIOVAAlignment uint64
}

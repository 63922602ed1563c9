//go:build linux

package vfio

// The requests whose argument is a struct, typed with it (see request).
const (
	reqGroupStatus     request[groupStatus]     = vfioGroupGetStatus
	reqSetContainer    request[int32]           = vfioGroupSetContainer
	reqDeviceInfo      request[deviceInfo]      = vfioDeviceGetInfo
	reqRegionInfo      request[regionInfo]      = vfioDeviceGetRegionInfo
	reqIRQInfo         request[irqInfo]         = vfioDeviceGetIRQInfo
	reqMapDMA          request[dmaMap]          = vfioIOMMUMapDMA
	reqUnmapDMA        request[dmaUnmap]        = vfioIOMMUUnmapDMA
	reqBindIOMMUFD     request[bindIOMMUFD]     = vfioDeviceBindIOMMUFD
	reqAttachIOMMUFDPT request[attachIOMMUFDPT] = vfioDeviceAttachIOMMUFD
	reqIOASAlloc       request[ioasAlloc]       = iommuIOASAlloc
	reqIOMMUDestroy    request[iommuDestroyArg] = iommuDestroy
	reqIOASMap         request[ioasMap]         = iommuIOASMap
	reqIOASUnmap       request[ioasUnmap]       = iommuIOASUnmap
)

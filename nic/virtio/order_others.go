//go:build !amd64

package virtio

// platformOrdered is false where the ring code's barriers (sync/atomic's) are not known to
// order accesses for a hardware device as VIRTIO_F_ORDER_PLATFORM requires (arm64 would
// need DMB OSH): the feature is declined there.
const platformOrdered = false

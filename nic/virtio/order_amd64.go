package virtio

// platformOrdered says the ring code's barriers are the ones VIRTIO_F_ORDER_PLATFORM asks
// for (those suitable for hardware devices, not only for another CPU). On amd64 they are:
// the available index and used_event are published with XCHG, a full fence for the device
// as for other CPUs, loads are not reordered with older loads, and the notify write to the
// uncached BAR is ordered after every earlier store. So the feature is accepted.
const platformOrdered = true

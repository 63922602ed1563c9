package virtio

// maxFrame is the largest frame the device delivers without MTU or GSO features (1514
// bytes plus a VLAN tag); every receive buffer must hold it.
const maxFrame = 1518

package guest

// The frames the host tests in package integration send to the guest's virtio tests, as
// both sides count them.
const (
	// VirtioFrames is how many frames the host sends in each phase of
	// TestGuestVirtioForward.
	VirtioFrames = 100
	// VirtioLatencyProbes is how many probes the host sends to each NIC in
	// TestGuestVirtioLatency.
	VirtioLatencyProbes = 400
	// VirtioMQFrames is how many marked frames the host sends in TestGuestVirtioMultiQueue.
	VirtioMQFrames = 256
)

// VirtioProbeSource is the source MAC of TestGuestVirtioLatency's probes, VirtioMQSource
// that of TestGuestVirtioMultiQueue's marked frames.
var (
	VirtioProbeSource = []byte{0x02, 0, 0, 0, 0, 0x77}
	VirtioMQSource    = []byte{0x02, 0, 0, 0, 0, 0x99}
)

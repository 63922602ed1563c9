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

// The receive filter phase of TestGuestVirtioForward: the guest joins FilterGroup on NIC 1
// (nic.RxFilter); the host sends NIC 1 one frame to each address of FilterDests, in that
// order, named in the payload ("filter NAME"), then a broadcast named "marker". The guest
// must receive exactly the joined group, its own address and the marker.
var (
	FilterGroup = []byte{0x33, 0x33, 0xff, 0x00, 0x00, 0x01}
	FilterDests = []struct {
		Name string
		Dst  []byte // nil: the NIC's own address
		Want bool
	}{
		{"group2", []byte{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}, false},
		{"stranger", []byte{0x02, 0x99, 0x88, 0x77, 0x66, 0x55}, false},
		{"group1", FilterGroup, true},
		{"ipv4group", []byte{0x01, 0x00, 0x5e, 0x01, 0x00, 0x03}, false},
		{"own", nil, true},
	}
)

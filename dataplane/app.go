package dataplane

// swapMACs exchanges the destination and source MAC addresses of an Ethernet frame.
// Frames shorter than the two addresses are left alone.
func swapMACs(f []byte) {
	if len(f) < 12 {
		return
	}
	var tmp [6]byte
	copy(tmp[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], tmp[:])
}

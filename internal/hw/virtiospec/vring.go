package virtiospec

// Split virtqueue descriptor flags.
const (
	DescNext     = 1
	DescWrite    = 2 // device-writable
	DescIndirect = 4
)

// Split virtqueue ring flags (without EVENT_IDX).
const (
	AvailNoInterrupt = 1 // driver → device: do not interrupt
	UsedNoNotify     = 1 // device → driver: do not notify
)

// Split virtqueue layout (virtio 1.x "Split Virtqueues"): the descriptor table holds
// DescLen-byte descriptors; the driver area (available ring) and the device area (used
// ring) start with a 16-bit flags word and a 16-bit index, then one entry per descriptor,
// then the event index of the other side (EVENT_IDX).
const (
	DescLen      = 16 // addr (8), len (4), flags (2), next (2)
	RingHdrLen   = 4  // flags and idx at the start of the driver and device areas
	AvailElemLen = 2  // an available ring entry: a descriptor head
	UsedElemLen  = 8  // a used ring element: id (4) and len (4)
)

// AvailEntryOff is the offset of available ring entry i in the driver area; entry size
// (one past the last) is used_event.
func AvailEntryOff(i int) int { return RingHdrLen + AvailElemLen*i }

// UsedEventOff is the offset of used_event in the driver area of a queue of size entries.
func UsedEventOff(size int) int { return AvailEntryOff(size) }

// UsedElemOff is the offset of used ring element i in the device area; element size (one
// past the last) is avail_event.
func UsedElemOff(i int) int { return RingHdrLen + UsedElemLen*i }

// AvailEventOff is the offset of avail_event in the device area of a queue of size
// entries.
func AvailEventOff(size int) int { return UsedElemOff(size) }

// EventIdxLag is how far a side that wants no notifications lets the event index it
// publishes fall behind the ring's index before moving it: a quarter of the 16-bit index
// space, well inside the half within which vring_need_event orders two indexes, so the
// stale event index never looks ahead of the other side.
const EventIdxLag = 1 << 14

package virtio

import "github.com/uiod/uiod/internal/hw/virtiospec"

// ringLayout places a split virtqueue of size descriptors in one DMA allocation: the
// descriptor table, the driver area (available ring with used_event and two bytes of
// padding, so that used_event can be stored as one aligned 32-bit word), the device area
// (used ring with avail_event, padded likewise) and the 16-byte header slots of the
// size/2 descriptor pairs. Every area starts on a 64-byte boundary.
type ringLayout struct {
	size                     int
	desc, avail, used, hdrs  int
	availLen, usedLen, total int
}

func align64(n int) int { return (n + 63) &^ 63 }

func layoutFor(size int) ringLayout {
	l := ringLayout{size: size}
	l.availLen = virtiospec.UsedEventOff(size) + 4 // used_event stored as a 32-bit word
	l.usedLen = virtiospec.AvailEventOff(size) + 4 // avail_event likewise
	l.avail = align64(virtiospec.DescLen * size)
	l.used = align64(l.avail + l.availLen)
	l.hdrs = align64(l.used + l.usedLen)
	l.total = l.hdrs + 16*(size/2)
	return l
}

// needEvent is the spec's vring_need_event: whether moving an index from old to new
// passes event, the index the other side asked to be told about.
func needEvent(event, new, old uint16) bool { return new-event-1 < new-old }

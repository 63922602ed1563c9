package virtiospec

import "testing"

// TestSplitLayout checks the offsets against the split virtqueue's C layout in the
// specification (struct virtq_avail, struct virtq_used) for a few queue sizes.
func TestSplitLayout(t *testing.T) {
	tests := []struct {
		size                                       int
		usedEvent, availEvent, lastAvail, lastUsed int
	}{
		{size: 8, usedEvent: 20, availEvent: 68, lastAvail: 18, lastUsed: 60},
		{size: 256, usedEvent: 516, availEvent: 2052, lastAvail: 514, lastUsed: 2044},
		{size: 32768, usedEvent: 65540, availEvent: 262148, lastAvail: 65538, lastUsed: 262140},
	}
	for _, tt := range tests {
		if got := UsedEventOff(tt.size); got != tt.usedEvent {
			t.Errorf("size %d: used_event at %d, want %d", tt.size, got, tt.usedEvent)
		}
		if got := AvailEventOff(tt.size); got != tt.availEvent {
			t.Errorf("size %d: avail_event at %d, want %d", tt.size, got, tt.availEvent)
		}
		if got := AvailEntryOff(tt.size - 1); got != tt.lastAvail {
			t.Errorf("size %d: last available entry at %d, want %d", tt.size, got, tt.lastAvail)
		}
		if got := UsedElemOff(tt.size - 1); got != tt.lastUsed {
			t.Errorf("size %d: last used element at %d, want %d", tt.size, got, tt.lastUsed)
		}
	}
}

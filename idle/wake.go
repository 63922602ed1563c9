package idle

// Wake is how a polling thread came to its latest poll.
type Wake uint8

// Wake causes.
const (
	// WakePoll: the thread was polling (busy, or within the idle threshold).
	WakePoll Wake = iota
	// WakeInterrupt: an RX interrupt ended the thread's sleep.
	WakeInterrupt
	// WakeTimer: auto's timer woke the thread a lead ahead of a predicted frame and it
	// has been polling for it since.
	WakeTimer
	// NumWakes is the number of causes.
	NumWakes
)

var wakeNames = [NumWakes]string{WakePoll: "poll", WakeInterrupt: "interrupt", WakeTimer: "timer"}

// String names the cause as the metrics label it: poll, interrupt or timer.
func (w Wake) String() string {
	if w < NumWakes {
		return wakeNames[w]
	}
	return "unknown"
}

// WokenBy says how the thread came to the poll it is running: call it between the poll
// and Traffic or Empty, on the polling thread. A nil Idler is always polling.
func (d *Idler) WokenBy() Wake {
	switch {
	case d == nil:
		return WakePoll
	case d.woke:
		return WakeInterrupt
	case d.watchUntil != 0:
		return WakeTimer
	}
	return WakePoll
}

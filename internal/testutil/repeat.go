package testutil

import "time"

// Repeat calls round with the round number (from 1) and the time left, again and again
// until d has passed or round returns false, and returns how many rounds ran: the loop
// of a test that runs for a duration (a soak, a flood), not one that waits for a
// condition (that is Eventually or WaitFor). A round that starts runs to its end.
func Repeat(d time.Duration, round func(n int, left time.Duration) bool) int {
	end := time.Now().Add(d)
	n := 0
	for left := time.Until(end); left > 0; left = time.Until(end) {
		n++
		if !round(n, left) {
			break
		}
	}
	return n
}

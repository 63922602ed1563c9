//go:build !linux

package latency

import "time"

// setTimerSlack does nothing and returns 0: timer slack is a Linux thread attribute.
func setTimerSlack(ns int) (old int) { return 0 }

// nanosleep sleeps ns nanoseconds with time.Sleep.
func nanosleep(ns int64) { time.Sleep(time.Duration(ns)) }

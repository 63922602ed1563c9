//go:build !linux

package idle

import "time"

// sleepHoldingP sleeps ns. Without Linux's raw nanosleep it is time.Sleep.
func sleepHoldingP(ns int64) { time.Sleep(time.Duration(ns)) }

// sleepReleasingP sleeps ns.
func sleepReleasingP(ns int64) { time.Sleep(time.Duration(ns)) }

//go:build !race

package irq

const raceEnabled = false

//go:build race

package l3fwd

const raceEnabled = true

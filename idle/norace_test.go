//go:build !race

package idle

const raceEnabled = false

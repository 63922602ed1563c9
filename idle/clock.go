package idle

import "time"

var clockBase = time.Now()

// Now is the poll loop's clock: monotonic nanoseconds since the process started, read
// through time.Now (vDSO, no system call). The loop reads it once per poll and passes it
// to Traffic or Empty; the Idler reads it itself only around the calls that block.
func Now() int64 { return int64(time.Since(clockBase)) }

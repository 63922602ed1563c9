package idle

// clockBase is the runtime's monotonic clock when the package was initialised.
var clockBase = nanotime()

// Now is the poll loop's clock: monotonic nanoseconds since the process started, the
// runtime's own clock (vDSO clock_gettime, no system call; the clock time.Now's
// monotonic reading comes from). The loop reads it once per told poll and passes it to
// Traffic or Empty; the Idler reads it itself only around the calls that block.
func Now() int64 { return nanotime() - clockBase }

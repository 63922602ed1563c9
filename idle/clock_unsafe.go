package idle

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock, as time.Since reads it, without
// time.Since's Time arithmetic and test-bubble check (~45 instructions of a busy turn
// that finds frames, bench/callgrind.sh loop). runtime.nanotime is one of the runtime's
// functions whose linkname Go keeps working on purpose (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

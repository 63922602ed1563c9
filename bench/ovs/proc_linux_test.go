package ovs

import "github.com/uiod/uiod/internal/testutil"

// proc is a process the benchmark started and stops: a switch, ovsdb-server or the front
// end.
type proc = testutil.Proc

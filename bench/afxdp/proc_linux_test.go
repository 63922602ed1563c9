package afxdp

import "github.com/uiod/uiod/internal/testutil"

// proc is a forwarder process the benchmark started: uiod run or dpdk-testpmd.
type proc = testutil.Proc

package vhost

import "github.com/uiod/uiod/internal/testutil"

// proc is a process the benchmark started and stops: a back end or the client.
type proc = testutil.Proc

package vhost

import (
	"path/filepath"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// proc is a process the benchmark started and stops: a back end or the client.
type proc = testutil.Proc

// sched is a process's scheduler accounting (time on a CPU, time waiting for one).
type sched = testutil.Sched

// testpmd starts dpdk-testpmd as name with its EAL arguments eal (--file-prefix=PREFIX
// added) and its own arguments args, in namespace ns unless that is empty.
func testpmd(t *testing.T, dir, name, bin, ns, prefix string, eal, args []string) *proc {
	t.Helper()
	argv := []string{bin}
	if ns != "" {
		argv = []string{"ip", "netns", "exec", ns, bin}
	}
	argv = append(append(append(argv, eal...), "--file-prefix="+prefix, "--"), args...)
	p := testutil.StartProc(t, dir, name, argv...)
	p.RunDir = filepath.Join("/var/run/dpdk", prefix)
	return p
}

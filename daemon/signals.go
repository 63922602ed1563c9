package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// ShutdownSignals are the signals on which a running daemon shuts down in order (loops
// stopped, queues off, interrupts masked, bus mastering off, DMA freed). SIGQUIT (which
// would otherwise make the Go runtime dump its goroutines and exit with the NIC still
// programmed) takes the same path as SIGINT and SIGTERM. SIGHUP reloads the
// configuration (ReloadSignal).
var ShutdownSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGQUIT}

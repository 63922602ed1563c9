package dataplane

import (
	"fmt"
	"regexp"
	"sync"
)

// DropReason says why a frame was dropped: the label of a per-queue drop counter
// (QueueStats.DropsBy, the reason label of uiod_queue_drops_total).
type DropReason uint8

// MaxDropReasons is how many reasons a process can register.
const MaxDropReasons = 32

// The dataplane's own reasons.
var (
	// DropNoVerdict counts frames the App decided nothing for.
	DropNoVerdict = RegisterDropReason("no_verdict")
	// DropTxFull counts frames the TX queue refused: its ring was full.
	DropTxFull = RegisterDropReason("tx_full")
	// DropNoTxQueue counts frames sent to a port the thread has no TX queue on.
	DropNoTxQueue = RegisterDropReason("no_tx_queue")
	// DropApp is a generic reason for apps that need no other.
	DropApp = RegisterDropReason("app")
)

var (
	reasonsMu   sync.RWMutex
	reasonNames []string
	reasonName  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// RegisterDropReason returns the reason called name, registering it the first time.
// Names are lower_snake_case, at most 32 bytes. Call it from a package-level var
// declaration; it panics on a bad name or past MaxDropReasons, both programming errors.
func RegisterDropReason(name string) DropReason {
	if !reasonName.MatchString(name) {
		panic(fmt.Sprintf("dataplane: drop reason %q is not lower_snake_case of at most 32 bytes", name))
	}
	reasonsMu.Lock()
	defer reasonsMu.Unlock()
	for i, n := range reasonNames {
		if n == name {
			return DropReason(i)
		}
	}
	if len(reasonNames) == MaxDropReasons {
		panic(fmt.Sprintf("dataplane: more than %d drop reasons (registering %q)", MaxDropReasons, name))
	}
	reasonNames = append(reasonNames, name)
	return DropReason(len(reasonNames) - 1)
}

// String is the reason's name.
func (r DropReason) String() string {
	reasonsMu.RLock()
	defer reasonsMu.RUnlock()
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("dataplane.DropReason(%d)", int(r))
}

// DropReasons lists the registered reasons' names, by value.
func DropReasons() []string {
	reasonsMu.RLock()
	defer reasonsMu.RUnlock()
	return append([]string(nil), reasonNames...)
}

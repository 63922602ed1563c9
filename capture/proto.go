package capture

import (
	"fmt"
	"github.com/uiod/uiod/internal/clip"
	"time"
)

// Request is what a client asks of the control socket: one JSON line.
type Request struct {
	Op        string   `json:"op"` // "capture"
	Ports     []string `json:"ports"`
	Queue     int      `json:"queue"`     // -1: every queue
	Direction string   `json:"direction"` // rx, tx or both ("" both)
	Snaplen   int      `json:"snaplen"`   // 0: DefaultSnaplen
	Count     uint64   `json:"count"`     // 0: no limit
	Duration  string   `json:"duration"`  // a Go duration; "" or 0: no limit
}

// Response answers a Request: one JSON line, followed (when Error is empty) by the
// pcapng stream until the capture ends.
type Response struct {
	Error string `json:"error,omitempty"`
	// Usage is set when the request itself was wrong (an unknown port, a bad value): the
	// client exits 2 for it, 1 for other errors (a port already being captured).
	Usage bool `json:"usage,omitempty"`
	// Ports are the captured ports, the pcapng's interfaces in order.
	Ports []string `json:"ports,omitempty"`
}

// Error is a failed request as the client sees it.
type Error struct {
	Msg   string
	Usage bool
}

func (e *Error) Error() string { return e.Msg }

// Limits of the control protocol.
const (
	maxRequest  = 4096
	maxPorts    = 64
	maxDuration = 365 * 24 * time.Hour
	quoteMax    = 64
)

// options checks r against the dataplane's port names and turns it into Options.
func (r *Request) options(names []string) (Options, error) {
	var o Options
	if r.Op != "capture" {
		return o, fmt.Errorf("op %s: want capture", clip.Quote(r.Op))
	}
	if len(r.Ports) == 0 {
		return o, fmt.Errorf("ports: none given (have %v)", names)
	}
	if len(r.Ports) > maxPorts {
		return o, fmt.Errorf("ports: %d given, at most %d", len(r.Ports), maxPorts)
	}
	for _, name := range r.Ports {
		id := -1
		for i, n := range names {
			if n == name {
				id = i
			}
		}
		if id < 0 {
			return o, fmt.Errorf("port %s: the daemon has no such port (have %v)", clip.Quote(name), names)
		}
		o.Ports = append(o.Ports, portID(id))
	}
	dir := r.Direction
	if dir == "" {
		dir = "both"
	}
	d, err := ParseDirection(dir)
	if err != nil {
		return o, err
	}
	o.Direction, o.Queue, o.Snaplen, o.Count = d, r.Queue, r.Snaplen, r.Count
	if r.Duration != "" {
		if o.Duration, err = time.ParseDuration(r.Duration); err != nil || o.Duration < 0 || o.Duration > maxDuration {
			return o, fmt.Errorf("duration %s: want a Go duration in [0, %s]", clip.Quote(r.Duration), maxDuration)
		}
	}
	return o, nil
}

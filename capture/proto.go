package capture

import (
	"fmt"
	"time"

	"golang.org/x/net/bpf"

	"github.com/uiod/uiod/internal/clip"
)

// Request is what a client asks of the control socket: one JSON line.
type Request struct {
	Op    string   `json:"op"` // "capture", or "list" (the ports; nothing else is read)
	Ports []string `json:"ports,omitempty"`
	// Queue is the one queue to capture; absent (nil) or -1: every queue.
	Queue     *int   `json:"queue,omitempty"`
	Direction string `json:"direction,omitempty"` // rx, tx or both ("" both)
	Snaplen   int    `json:"snaplen,omitempty"`   // 0: DefaultSnaplen
	Count     uint64 `json:"count,omitempty"`     // 0: no limit
	Duration  string `json:"duration,omitempty"`  // a Go duration; "" or 0: no limit
	// Filter is a classic BPF program, each instruction [code, jt, jf, k] as
	// `tcpdump -ddd` prints it; FilterText is its source, for the interface blocks.
	Filter     [][4]uint32 `json:"filter,omitempty"`
	FilterText string      `json:"filter_text,omitempty"`
}

// PortInfo describes one of the daemon's ports, for `uiod capture -D`.
type PortInfo struct {
	Name      string `json:"name"`
	MAC       string `json:"mac"`
	Driver    string `json:"driver"`
	LinkUp    bool   `json:"link_up"`
	SpeedMbps int    `json:"speed_mbps,omitempty"`
	RxQueues  int    `json:"rx_queues"`
	TxQueues  int    `json:"tx_queues"`
	Capturing bool   `json:"capturing,omitempty"`
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
	// List answers a "list" request.
	List []PortInfo `json:"list,omitempty"`
}

// Error is a failed request as the client sees it.
type Error struct {
	Msg   string
	Usage bool
}

func (e *Error) Error() string { return e.Msg }

// Limits of the control protocol.
const (
	maxRequest    = 4096
	maxPorts      = 64
	maxDuration   = 365 * 24 * time.Hour
	quoteMax      = 64
	maxFilterText = 1024
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
	o.Direction, o.Queue, o.Snaplen, o.Count = d, -1, r.Snaplen, r.Count
	if r.Queue != nil {
		o.Queue = *r.Queue
	}
	if len(r.Filter) > maxFilter {
		return o, fmt.Errorf("filter: %d instructions, at most %d", len(r.Filter), maxFilter)
	}
	if len(r.FilterText) > maxFilterText {
		return o, fmt.Errorf("filter_text: %d bytes, at most %d", len(r.FilterText), maxFilterText)
	}
	if len(r.Filter) > 0 {
		for i, ins := range r.Filter {
			if ins[0] > 0xffff || ins[1] > 0xff || ins[2] > 0xff {
				return o, fmt.Errorf("filter: instruction %d %v: code, jt or jf out of range", i, ins)
			}
		}
		o.Filter = rawProgram(r.Filter)
		if _, err := CompileFilter(o.Filter); err != nil {
			return o, err
		}
		o.FilterText = r.FilterText
	}
	if r.Duration != "" {
		if o.Duration, err = time.ParseDuration(r.Duration); err != nil || o.Duration < 0 || o.Duration > maxDuration {
			return o, fmt.Errorf("duration %s: want a Go duration in [0, %s]", clip.Quote(r.Duration), maxDuration)
		}
	}
	return o, nil
}

// rawProgram converts [code, jt, jf, k] instructions (each field in range).
func rawProgram(prog [][4]uint32) []bpf.RawInstruction {
	raw := make([]bpf.RawInstruction, len(prog))
	for i, ins := range prog {
		raw[i] = bpf.RawInstruction{Op: uint16(ins[0]), Jt: uint8(ins[1]), Jf: uint8(ins[2]), K: ins[3]}
	}
	return raw
}

package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/uiod/uiod/daemon"
)

// bridgeReport is forward.mode bridge's part of the report: the MAC table's size and
// each port's counters since start (the table itself is in the daemon's /status).
type bridgeReport struct {
	Ageing  string                    `json:"ageing"`
	Entries int                       `json:"entries"`
	Ports   []daemon.BridgePortStatus `json:"ports"`
}

func newBridgeReport(b *daemon.BridgeStatus) *bridgeReport {
	if b == nil {
		return nil
	}
	return &bridgeReport{Ageing: b.Ageing, Entries: b.Entries, Ports: b.Ports}
}

// writeBridge prints the bridge's table of ports when the daemon runs one.
func (r statusReport) writeBridge(w io.Writer, width int) {
	b := r.Bridge
	if b == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "bridge: %d MACs, ageing %s, counts since start (table: /status .bridge.fdb)\n", b.Entries, b.Ageing)
	t := newTextTable("PORT", "MACS#", "LEARNED#", "MOVED#", "REFUSED#", "FLOODED#", "LIMITED#", "DROPPED#")
	for _, p := range b.Ports {
		t.add(p.Name, strconv.FormatInt(p.Entries, 10), count(p.Learned), count(p.Moved), count(p.Refused), count(p.Flooded), count(p.FloodLimited), count(p.Dropped))
	}
	t.write(w, width)
}

package main

import (
	"strings"
	"testing"

	"github.com/uiod/uiod/daemon"
)

func TestStatusFIB(t *testing.T) {
	for _, c := range []struct {
		name string
		fib  *daemon.FIBStatus
		want string
	}{
		{"none", nil, ""},
		{"static", &daemon.FIBStatus{Source: "static", Routes: 3, Static: 3, Local: 2, Generation: 1}, "\nroutes: 3 static, 2 local (table: /status .fib)\n"},
		{"kernel", &daemon.FIBStatus{Source: "kernel", Table: 254, Routes: 7, Static: 1, Kernel: 6, Unresolved: 2, Local: 4, Generation: 9,
			Neighbours: []daemon.FIBNeighbour{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}},
			"\nroutes: 7 (6 from kernel table 254, 2 unresolved; 1 static), 4 local, 2 neighbours, generation 9 (table: /status .fib)\n"},
		{"full", &daemon.FIBStatus{Source: "kernel", Table: 254, Routes: 4, Kernel: 4, Generation: 3, OverLimit: 5, MaxRoutes: 4, MaxRoutes6: 8},
			"\nroutes: 4 (4 from kernel table 254, 0 unresolved; 0 static), 0 local, 0 neighbours, generation 3 (table: /status .fib)\ntable full: 5 left out (max_routes 4, max_routes6 8: /status .fib.first_over_limit)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newStatusReport("http://x", daemon.Status{}, daemon.Status{FIB: c.fib})
			var b strings.Builder
			r.writeFIB(&b)
			if b.String() != c.want {
				t.Errorf("got %q\nwant %q", b.String(), c.want)
			}
		})
	}
}

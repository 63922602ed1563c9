package main

import (
	"fmt"
	"io"

	"github.com/uiod/uiod/daemon"
)

// fibReport is forward.mode l3fwd's part of the report: how many routes it forwards by
// and where they come from (the routes themselves are in the daemon's /status .fib).
type fibReport struct {
	Source     string `json:"source"`
	Table      int    `json:"table,omitempty"`
	Routes     int    `json:"routes"`
	Static     int    `json:"static"`
	Kernel     int    `json:"kernel"`
	Unresolved int    `json:"unresolved"`
	Local      int    `json:"local"`
	Neighbours int    `json:"neighbours"`
	Generation uint64 `json:"generation"`
	OverLimit  int    `json:"over_limit"`
	MaxRoutes  int    `json:"max_routes"`
	MaxRoutes6 int    `json:"max_routes6"`
}

func newFIBReport(f *daemon.FIBStatus) *fibReport {
	if f == nil {
		return nil
	}
	return &fibReport{Source: f.Source, Table: f.Table, Routes: f.Routes, Static: f.Static, Kernel: f.Kernel,
		Unresolved: f.Unresolved, Local: f.Local, Neighbours: len(f.Neighbours), Generation: f.Generation,
		OverLimit: f.OverLimit, MaxRoutes: f.MaxRoutes, MaxRoutes6: f.MaxRoutes6}
}

// writeFIB prints the router's route count when the daemon runs l3fwd.
func (r statusReport) writeFIB(w io.Writer) {
	f := r.FIB
	if f == nil {
		return
	}
	fmt.Fprintln(w)
	if f.Source == "kernel" {
		fmt.Fprintf(w, "routes: %d (%d from kernel table %d, %d unresolved; %d static), %d local, %d neighbours, generation %d (table: /status .fib)\n",
			f.Routes, f.Kernel, f.Table, f.Unresolved, f.Static, f.Local, f.Neighbours, f.Generation)
		if f.OverLimit > 0 {
			fmt.Fprintf(w, "table full: %d left out (max_routes %d, max_routes6 %d: /status .fib.first_over_limit)\n", f.OverLimit, f.MaxRoutes, f.MaxRoutes6)
		}
		return
	}
	fmt.Fprintf(w, "routes: %d static, %d local (table: /status .fib)\n", f.Static, f.Local)
}

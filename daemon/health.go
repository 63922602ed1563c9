package daemon

import (
	"fmt"
	"net/http"
	"strings"
)

// addHealth serves the probes a supervisor (a Kubernetes kubelet, a load balancer) asks:
// /healthz answers 200 while the process serves HTTP at all (liveness), /readyz 200 only
// while the dataplane runs and every port is present with its link up (readiness), else
// 503 with what is not ready, one reason a line.
func (d *Daemon) addHealth(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := d.notReady(); len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready:\n%s\n", strings.Join(why, "\n"))
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// notReady lists why the daemon is not ready, nil when it is.
func (d *Daemon) notReady() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running || d.dp == nil {
		return []string{"dataplane not running"}
	}
	var why []string
	for _, p := range d.ports {
		switch {
		case p.absent():
			why = append(why, fmt.Sprintf("port %s (%s): absent (the kernel took the device back)", p.cfg.Name, p.addr))
		case !p.nic.Link().Up:
			why = append(why, fmt.Sprintf("port %s (%s): link down", p.cfg.Name, p.addr))
		}
	}
	return why
}

package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/internal/clip"
)

// httpLimits bound what clients of the metrics endpoint can hold: how long a request may
// take to arrive and its response to be written, how long an idle keep-alive connection
// stays open, how many connections are open at once (at the cap a new one closes the
// longest-idle one, or waits while every one is mid-request; see connLimiter), and the
// size of a request's headers.
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	maxConns                      int
	maxHeaderBytes                int
}

// defaultHTTPLimits are generous for a Prometheus scraper or `uiod status`, and small
// enough that slow or idle clients cannot pile up in a process that runs as root.
var defaultHTTPLimits = httpLimits{
	readHeader:     5 * time.Second,
	read:           10 * time.Second,
	write:          30 * time.Second,
	idle:           10 * time.Second,
	maxConns:       16,
	maxHeaderBytes: 16 << 10,
}

// allowedMethods is the Allow header of a 405: the endpoint only ever reads.
const allowedMethods = "GET, HEAD"

// listenMetrics listens on addr, which must be an IP literal (or empty, every address)
// with a port: localhost has been replaced by 127.0.0.1 (config.Metrics.ListenAddr). A
// host name is refused, never looked up: a name can resolve elsewhere than the
// configuration meant, and the daemon does not touch the network to find out.
func listenMetrics(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil {
		return nil, fmt.Errorf("%s is not an IP address or localhost (names are never resolved)", clip.Quote(host))
	}
	return net.Listen("tcp", addr)
}

// serveHTTP starts the HTTP endpoint on metrics.listen.
func (d *Daemon) serveHTTP() error {
	ln, err := listenMetrics(d.cfg.Metrics.ListenAddr())
	if err != nil {
		return fmt.Errorf("metrics.listen: %w", err)
	}
	d.serveOn(ln)
	return nil
}

// closeHTTP closes the HTTP endpoint, if it runs.
func (d *Daemon) closeHTTP() {
	if d.http != nil {
		_ = d.http.Close()
		d.http = nil
	}
	d.listener = nil
}

// serveOn serves the HTTP endpoint on ln: Prometheus text at /metrics, JSON at /status,
// an index at /. It answers GET and HEAD only.
func (d *Daemon) serveOn(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", d.metricsHandler())
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(d.Status())
	})
	d.addHealth(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "uiod: /metrics (Prometheus), /status (JSON), /healthz, /readyz")
	})
	lim := d.httpLimits
	d.listener = ln
	d.http = &http.Server{
		Handler:           readOnly(mux),
		ReadHeaderTimeout: lim.readHeader,
		ReadTimeout:       lim.read,
		WriteTimeout:      lim.write,
		IdleTimeout:       lim.idle,
		MaxHeaderBytes:    lim.maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(d.log.Named("http")),
	}
	limited := newConnLimiter(ln, lim.maxConns)
	d.http.ConnState = limited.trackState
	srv := d.http
	go func() {
		if err := srv.Serve(limited); err != nil && err != http.ErrServerClosed {
			d.log.Error("metrics endpoint", zap.Error(err))
		}
	}()
	d.log.Info("metrics endpoint", zap.String("listen", ln.Addr().String()))
}

// readOnly answers every method but GET and HEAD with 405 Method Not Allowed.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", allowedMethods)
			http.Error(w, fmt.Sprintf("method %s not allowed: the endpoint is read-only (%s)", r.Method, allowedMethods), http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

package daemon

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestHTTPMethods: the endpoint reads only. GET and HEAD are served on every page; any
// other method is 405 with an Allow header, and changes nothing.
func TestHTTPMethods(t *testing.T) {
	_, base := startDaemon(t, simConfig(t, "dhttpm", "adaptive", ""))
	for _, path := range []string{"/", "/metrics", "/status"} {
		for _, tt := range []struct {
			method string
			want   int
		}{
			{http.MethodGet, http.StatusOK},
			{http.MethodHead, http.StatusOK},
			{http.MethodPost, http.StatusMethodNotAllowed},
			{http.MethodPut, http.StatusMethodNotAllowed},
			{http.MethodDelete, http.StatusMethodNotAllowed},
			{http.MethodPatch, http.StatusMethodNotAllowed},
			{http.MethodOptions, http.StatusMethodNotAllowed},
			{"PROPFIND", http.StatusMethodNotAllowed},
		} {
			req, err := http.NewRequest(tt.method, base+path, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.method, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s = %d, want %d", tt.method, path, resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusMethodNotAllowed {
				if a := resp.Header.Get("Allow"); a != "GET, HEAD" {
					t.Errorf("%s %s: Allow %q, want \"GET, HEAD\"", tt.method, path, a)
				}
			}
			if tt.method == http.MethodHead && len(body) != 0 {
				t.Errorf("HEAD %s returned a %d-byte body", path, len(body))
			}
		}
	}
}

// TestHTTPLimits: slow and idle clients are cut off and at most maxConns connections are
// served at once, so a client cannot hold the root-owned daemon's resources.
func TestHTTPLimits(t *testing.T) {
	lim := httpLimits{readHeader: 200 * time.Millisecond, read: time.Second, write: time.Second, idle: 200 * time.Millisecond, maxConns: 2, maxHeaderBytes: 4 << 10}
	start := func(t *testing.T, name string, lim httpLimits) string {
		t.Helper()
		d := New(simConfig(t, name, "adaptive", ""), Options{})
		d.httpLimits = lim
		if err := d.Start(); err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { d.Stop() })
		return d.MetricsAddr()
	}
	dial := func(t *testing.T, addr string) net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	const get = "GET /status HTTP/1.1\r\nHost: x\r\n\r\n"
	// closedByServer reads from c until the server closes it; the bound is a hang guard
	// far above the limits under test.
	closedByServer := func(t *testing.T, c net.Conn, what string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err := io.Copy(io.Discard, c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: connection still open after 20 s", what)
		}
	}

	t.Run("slow header", func(t *testing.T) {
		c := dial(t, start(t, "dhttpslow", lim))
		if _, err := io.WriteString(c, "GET /status HTTP/1.1\r\n"); err != nil { // never finished
			t.Fatal(err)
		}
		closedByServer(t, c, "half-sent request")
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, start(t, "dhttpidle", lim))
		if _, err := io.WriteString(c, get); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatal("server closed the keep-alive connection at once; the idle limit is untested")
		}
		closedByServer(t, c, "idle keep-alive connection")
	})
	t.Run("connection cap", func(t *testing.T) {
		capped := lim
		capped.readHeader = time.Minute // only the cap may close the connections here
		capped.read = time.Minute
		addr := start(t, "dhttpcap", capped)
		// Four connections that send nothing, one after the other, against a cap of 2:
		// each new one beyond the cap closes the oldest, so the first two are closed
		// by the server and the last two are served.
		conns := make([]net.Conn, 4)
		for i := range conns {
			conns[i] = dial(t, addr)
		}
		for _, c := range conns[:2] {
			closedByServer(t, c, "connection beyond the cap")
		}
		for i, c := range conns[2:] {
			if _, err := io.WriteString(c, get); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("connection %d, within the cap, not served: %v", i+2, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("connection %d: %s", i+2, resp.Status)
			}
		}
	})
}

// TestHTTPIdleLockout: connections that hold a slot without a request in flight — idle
// keep-alive connections and connections that never send a byte, twice the cap of each
// — cannot lock a scraper out: its scrapes are answered while they stay open. The idle
// and header timeouts are a minute, so only the eviction of idle connections can let the
// scrapes through within the bound.
func TestHTTPIdleLockout(t *testing.T) {
	lim := defaultHTTPLimits
	lim.idle, lim.readHeader, lim.read = time.Minute, time.Minute, time.Minute
	d := New(simConfig(t, "dhttplock", "adaptive", ""), Options{})
	d.httpLimits = lim
	if err := d.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { d.Stop() })
	addr := d.MetricsAddr()
	var holders []net.Conn
	defer func() {
		for _, c := range holders {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		holders = append(holders, c)
		return c
	}
	for i := 0; i < 2*lim.maxConns; i++ { // keep-alive connections left idle after one request
		c := dial()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(c, "GET /status HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			// Evicted by a later holder: the cap is doing its work.
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := 0; i < 2*lim.maxConns; i++ { // connections that never send a byte
		dial()
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 3; i++ {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d with %d idle connections open: %v", i, len(holders), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d: %s", i, resp.Status)
		}
	}
}

// TestMetricsListenNoLookup: the daemon binds localhost as 127.0.0.1 and refuses a host
// name instead of resolving it, whatever config it is handed.
func TestMetricsListenNoLookup(t *testing.T) {
	cfg := simConfig(t, "dlisten", "adaptive", "")
	cfg.Metrics.Listen = "LocalHost:0"
	d, _ := startDaemon(t, cfg)
	if addr := d.MetricsAddr(); !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("metrics.listen LocalHost:0 bound %s, want 127.0.0.1", addr)
	}
	d.Stop()

	cfg = simConfig(t, "dlisten2", "adaptive", "")
	cfg.Metrics.Listen = "uiod-test.invalid:0"
	d = New(cfg, Options{})
	err := d.Start()
	if err == nil {
		d.Stop()
	}
	testutil.ErrorContains(t, err, "metrics.listen", "not an IP address")
}

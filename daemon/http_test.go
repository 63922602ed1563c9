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
		capped.idle = time.Minute // the two holders must not time out during the test
		addr := start(t, "dhttpcap", capped)
		// Two keep-alive connections hold both slots; a third client's request waits in
		// the backlog until one of them goes away.
		idle := []net.Conn{dial(t, addr), dial(t, addr)}
		for _, c := range idle {
			if _, err := io.WriteString(c, get); err != nil {
				t.Fatal(err)
			}
			if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
				t.Fatal(err)
			}
		}
		third := dial(t, addr)
		if _, err := io.WriteString(third, get); err != nil {
			t.Fatal(err)
		}
		third.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var b [1]byte
		if _, err := third.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("third connection answered while two held the cap of 2 (read: %v)", err)
		}
		idle[0].Close()
		third.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(third), nil)
		if err != nil {
			t.Fatalf("third connection not served after a slot freed: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("third connection: %s", resp.Status)
		}
	})
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

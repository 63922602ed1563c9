package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/internal/clip"
)

// defaultConfigPath is where the package installs the daemon's configuration.
const defaultConfigPath = "/etc/uiod/uiod.yaml"

// statusMaxBody bounds a /status document; a daemon with hundreds of queues stays far
// below it.
const statusMaxBody = 4 << 20

func newStatusCmd(g *globals) *cobra.Command {
	var (
		cfgPath, metrics string
		asJSON, watch    bool
		wide             bool
		interval         time.Duration
		count            int
	)
	cmd := &cobra.Command{
		Use:   "status [--config FILE | --metrics ADDR] [--json | --wide] [--watch]",
		Short: "Show a running daemon's ports and poll threads",
		Long: `Status reads a running daemon's /status page twice, --interval apart, and prints per
port the link, frames per second in and out, the totals and drops, and per poll thread
its state (polling, armed, asleep), CPU use over the interval, wake-ups per second by
cause and the idle policy's current threshold and estimates.

The daemon's address is metrics.listen of --config FILE, or --metrics ADDR (host:port
or an http:// URL); with neither, metrics.listen of ` + defaultConfigPath + ` (under --root) when
that file exists, else ` + config.DefaultMetricsListen + `. --watch refreshes in place like top until
interrupted or --count refreshes were shown, and while the daemon does not answer it says
so and keeps trying. The tables fit 80 columns; --wide adds totals, MACs, the backend
driver, every wake-up cause and the auto policy's estimates. --json prints the same as one
JSON object (one per line with --watch): durations are numbers of seconds in fields named
*_seconds (uptime_seconds, idle_threshold_seconds, ...), each port names its backend
(driver) and its NIC driver (nic).
A daemon that does not answer the first sample exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 || interval > time.Hour {
				return usagef("--interval %v: want more than 0 and at most 1h", interval)
			}
			if count < 0 {
				return usagef("--count %d: want 0 (until interrupted) or more", count)
			}
			if cmd.Flags().Changed("count") && !watch {
				return usagef("--count needs --watch")
			}
			metricsSet := cmd.Flags().Changed("metrics")
			if cfgPath == "" && !metricsSet {
				if p := filepath.Join(g.root, defaultConfigPath); fileExists(p) {
					cfgPath = p
				}
			}
			base, err := statusBase(g.root, cfgPath, metrics, metricsSet)
			if err != nil {
				return err
			}
			if !watch {
				count = 1
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := statusWatcher{
				client: &http.Client{Timeout: 5 * time.Second}, base: base,
				out: cmd.OutOrStdout(), asJSON: asJSON, wide: wide, interval: interval,
				clear: watch && !asJSON && isTerminal(cmd.OutOrStdout()),
			}
			return w.run(ctx, count, watch)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfgPath, "config", "c", "", "read the daemon's address from this configuration's metrics.listen")
	f.StringVar(&metrics, "metrics", config.DefaultMetricsListen, "the daemon's metrics address, host:port or http://host:port (instead of --config)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of tables (durations as numbers of seconds, *_seconds)")
	f.BoolVar(&wide, "wide", false, "print every column: totals, MAC, backend, each wake-up cause, the auto policy's estimates (wider than 80 columns)")
	f.BoolVarP(&watch, "watch", "w", false, "refresh in place until interrupted (or --count refreshes)")
	f.DurationVarP(&interval, "interval", "i", time.Second, "time between the two samples rates are computed from, and between refreshes")
	f.IntVarP(&count, "count", "n", 0, "with --watch: stop after this many refreshes (0: until interrupted)")
	return cmd
}

// statusBase returns the daemon's base URL from --metrics (when given) or --config.
func statusBase(root, cfgPath, metrics string, metricsSet bool) (*url.URL, error) {
	if cfgPath != "" && metricsSet {
		return nil, usagef("--config and --metrics both name the daemon: give one")
	}
	addr := metrics
	if cfgPath != "" {
		cfg, err := config.Loader{Root: root}.Load(cfgPath)
		if err != nil {
			return nil, configLoadError(cfgPath, err)
		}
		if !cfg.MetricsEnabled() {
			return nil, usagef("%s: metrics.listen is empty: the daemon serves no /status", cfgPath)
		}
		addr = cfg.Metrics.Listen
	}
	u, err := metricsURL(addr)
	if err != nil {
		return nil, asUsage(fmt.Errorf("--metrics: %w", err))
	}
	return u, nil
}

// metricsURL turns a listen address or URL into the URL to reach it at: a wildcard or
// missing host (the daemon listens everywhere) is reached on loopback.
func metricsURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%s: only http:// is served", clip.Quote(addr))
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("%s: want host:port", clip.Quote(addr))
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	u.Host = net.JoinHostPort(host, port)
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// statusWatcher samples a daemon's /status and prints reports.
type statusWatcher struct {
	client   *http.Client
	base     *url.URL
	out      io.Writer
	asJSON   bool
	wide     bool // every column, wider than statusWidth
	clear    bool // redraw in place: the output is a terminal and --watch is on
	interval time.Duration
}

// run prints count reports (0: until ctx ends), each from two samples interval apart.
// An interrupt ends it without an error. The first sample must succeed; with watch, a later
// failure (the daemon restarting) is shown in place of a report and sampling goes on.
func (w *statusWatcher) run(ctx context.Context, count int, watch bool) error {
	prev, err := w.fetch(ctx)
	if err != nil {
		return err
	}
	for n := 0; count == 0 || n < count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.interval):
		}
		cur, err := w.fetch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r := newStatusReport(w.base.String(), prev, cur)
		if err != nil {
			if !watch {
				return err
			}
			r = statusReport{Daemon: w.base.String(), Error: err.Error(), Ports: []portReport{}, Threads: []threadReport{}}
		}
		if err := w.print(r); err != nil {
			return err
		}
		prev = cur // after a failure the zero Status: the next report has no rates
	}
	return nil
}

func (w *statusWatcher) print(r statusReport) error {
	if w.asJSON {
		return json.NewEncoder(w.out).Encode(r)
	}
	var b strings.Builder
	if w.clear {
		b.WriteString("\x1b[H\x1b[2J") // cursor home, clear screen
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "%s: %s\n", time.Now().Format(time.TimeOnly), r.Error)
	} else {
		r.writeText(&b, w.wide)
	}
	_, err := io.WriteString(w.out, b.String())
	return err
}

// fetch reads one /status sample.
func (w *statusWatcher) fetch(ctx context.Context) (daemon.Status, error) {
	var st daemon.Status
	u := w.base.JoinPath("/status").String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return st, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		if errors.Is(err, unix.ECONNREFUSED) {
			return st, fmt.Errorf("no uiod daemon is answering at %s (is `uiod run` running with this metrics.listen?)", w.base)
		}
		return st, fmt.Errorf("daemon at %s: %w", w.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("daemon at %s: GET /status: %s", w.base, resp.Status)
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, statusMaxBody))
	if err := dec.Decode(&st); err != nil {
		return st, fmt.Errorf("daemon at %s: /status is not a uiod status document: %w", w.base, err)
	}
	return st, nil
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

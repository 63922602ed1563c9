package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/capture"
	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci"
)

func newCaptureCmd(g *globals) *cobra.Command {
	var (
		ports             []string
		queue             int
		direction         string
		count             uint64
		duration          time.Duration
		snaplen           int
		out               string
		cfgPath, stateDir string
	)
	cmd := &cobra.Command{
		Use:   "capture --port NAME [--port NAME...] -w FILE|- [--queue N] [--direction rx|tx|both] [-c COUNT] [--duration D] [-s SNAPLEN]",
		Short: "Capture a running daemon's ports into pcapng, like dpdk-dumpcap",
		Long: `Capture asks the running daemon, over its control socket (<state_dir>/` + capture.SocketName + `,
mode 0600, root or the daemon's user only), to mirror the frames its poll threads receive
on and send out of the named ports, and writes them as pcapng: an interface per port,
nanosecond timestamps from the poll loop, the direction of each frame, and at the end
each interface's statistics block with the frames the mirror had to drop.

The poll threads never wait for a capture: frames are copied into a bounded ring per
thread, and a ring that is full drops the frame and counts it. A client that stops
reading has its capture ended after 5 s. One capture per port at a time.

It ends after -c frames, after --duration, or on Ctrl-C (the daemon then sends the
statistics, so the file is complete). -w - writes to standard output, for
"uiod capture --port xe0 -w - | tcpdump -r -". The summary goes to standard error.

The state directory is state_dir of --config FILE, or --state-dir, or $UIOD_STATE_DIR,
or ` + config.DefaultStateDir + `, under --root.`,
		Example: `  uiod capture --port port0 -c 100 -w /tmp/port0.pcapng
  uiod capture --port port0 --port port1 --direction rx --duration 10s -w - | tshark -r -
  uiod capture --config /etc/uiod/uiod.yaml --port xe0 --queue 1 -s 128 -w xe0.pcapng`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(ports) == 0 {
				return usagef("--port: give the port to capture (a name from the daemon's configuration)")
			}
			if out == "" {
				return usagef("-w: give a file to write, or - for standard output")
			}
			if _, err := capture.ParseDirection(direction); err != nil {
				return asUsage(fmt.Errorf("--direction: %w", err))
			}
			if queue < -1 {
				return usagef("--queue %d: want a queue number, or -1 for every queue", queue)
			}
			if snaplen < 0 || snaplen > capture.MaxSnaplen {
				return usagef("--snaplen %d: want 1 to %d (0: %d)", snaplen, capture.MaxSnaplen, capture.DefaultSnaplen)
			}
			if duration < 0 {
				return usagef("--duration %v: want 0 (until interrupted) or more", duration)
			}
			sock, err := controlSocket(g.root, cfgPath, stateDir, cmd.Flags().Changed("state-dir"))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			var f *os.File
			if out != "-" {
				if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
					return asUsage(fmt.Errorf("-w: %w", err))
				}
				w = f
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			req := capture.Request{Op: "capture", Ports: ports, Queue: queue, Direction: direction, Snaplen: snaplen, Count: count}
			if duration > 0 {
				req.Duration = duration.String()
			}
			sum, err := capture.Capture(ctx, sock, req, w)
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if sum.Ports == nil { // refused: leave no empty file behind
					os.Remove(out)
				}
			}
			var ce *capture.Error
			if errors.As(err, &ce) && ce.Usage {
				return asUsage(err)
			}
			if err != nil {
				return err
			}
			printCaptureSummary(cmd.ErrOrStderr(), sum)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&ports, "port", nil, "port to capture, by its configuration name (repeat for more)")
	f.IntVar(&queue, "queue", -1, "capture only this queue number (-1: every queue)")
	f.StringVar(&direction, "direction", "both", "rx, tx or both")
	f.Uint64VarP(&count, "count", "c", 0, "stop after this many frames (0: no limit)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: until interrupted)")
	f.IntVarP(&snaplen, "snaplen", "s", 0, fmt.Sprintf("bytes kept of each frame (0: %d)", capture.DefaultSnaplen))
	f.StringVarP(&out, "write", "w", "", "pcapng file to write, - for standard output")
	f.StringVar(&cfgPath, "config", "", "the daemon's configuration, for its state_dir")
	f.StringVar(&stateDir, "state-dir", "", "the daemon's state_dir (default: $UIOD_STATE_DIR or "+config.DefaultStateDir+")")
	return cmd
}

// controlSocket is the daemon's control socket under root: in the state_dir of cfgPath,
// of --state-dir, of $UIOD_STATE_DIR, or the default one.
func controlSocket(root, cfgPath, stateDir string, stateDirSet bool) (string, error) {
	if cfgPath != "" && stateDirSet {
		return "", usagef("--config and --state-dir both name the daemon: give one")
	}
	dir := stateDir
	switch {
	case cfgPath != "":
		cfg, err := config.Loader{Root: root}.Load(cfgPath)
		if err != nil {
			return "", configLoadError(cfgPath, err)
		}
		dir = cfg.StateDir
	case !stateDirSet:
		if dir = os.Getenv("UIOD_STATE_DIR"); dir == "" {
			dir = config.DefaultStateDir
		}
	}
	if !filepath.IsAbs(dir) {
		return "", usagef("--state-dir %q: want an absolute path", dir)
	}
	h, err := pci.NewHost(root)
	if err != nil {
		return "", asUsage(err)
	}
	p, err := h.Path(filepath.Join(dir, capture.SocketName))
	if err != nil {
		return "", asUsage(fmt.Errorf("state_dir %s: %w", dir, err))
	}
	return p, nil
}

func printCaptureSummary(w io.Writer, sum capture.Summary) {
	for i, p := range sum.Ports {
		fmt.Fprintf(w, "%s: %d frames captured, %d dropped by the capture\n", p, sum.Captured[i], sum.Dropped[i])
	}
}

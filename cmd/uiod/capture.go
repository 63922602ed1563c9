package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/capture"
	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci/pcihost"
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
		groupRead, pcap   bool
		quiet, list       bool
		filter            string
		ring, autostop    []string
	)
	cmd := &cobra.Command{
		Use:   "capture -i PORT [-i PORT...] -w FILE|- [-f FILTER] [--queue N] [--direction rx|tx|both] [-c COUNT] [-s SNAPLEN] [-b COND...] [-a COND...] [-P] [-g] [-q] | -D",
		Short: "Capture a running daemon's ports into pcapng, like dpdk-dumpcap",
		Long: `Capture asks the running daemon, over its control socket (<state_dir>/` + capture.SocketName + `:
root, the daemon's user and the members of its capture.group only), to mirror the
frames its poll threads receive on and send out of the named ports, and writes them
as pcapng: an interface per port (with its MAC address and link speed), nanosecond
timestamps from the poll loop, in time order across poll threads, each frame's
direction and queue, and at the end each interface's statistics block: frames seen,
accepted by the filter, captured, and the frames the capture had to drop, with why
the capture ended.

The poll threads never wait for a capture: frames are copied into a 4 MiB ring per
thread, and a frame that does not fit is dropped and counted. A reader that stops
(a paused Wireshark, a pipe into less) keeps its capture; what the rings could not
hold meanwhile is counted as dropped. One capture per port at a time.

-f takes a capture filter in pcap-filter(7) syntax ("tcp port 80"), compiled by
tcpdump (-ddd; it must be on $PATH) and run by the daemon on each frame before it is
copied. TX frames are mirrored just before the TX burst, so a frame the TX ring then
refuses appears as sent, as with DPDK's pdump.

It ends after -c frames, after --duration, on an -a condition, or on Ctrl-C (the
daemon then sends the statistics, so the file is complete). -w - writes to standard
output, for "uiod capture -i xe0 -w - | tcpdump -r -". -w FILE is created 0600 (0640
with -g) only once the daemon accepted the capture; it must be a regular file if it
exists, and uiod never removes a file it did not create. -b switches files as
dumpcap does: -w x.pcapng -b filesize:1000 -b files:5 keeps the newest five files
x_00001_YYYYMMDDhhmmss.pcapng... of about 1 MB. Sizes are in kB (1000 bytes).
The summary goes to standard error (-q: none).

The state directory is state_dir of --config FILE, or --state-dir, or $UIOD_STATE_DIR,
or ` + config.DefaultStateDir + `, under --root.`,
		Example: `  uiod capture -D
  uiod capture -i port0 -c 100 -w /tmp/port0.pcapng
  uiod capture -i port0 -i port1 --direction rx -f 'udp port 53' -a duration:10 -w - | tshark -r -
  uiod capture -i xe0 -w /var/tmp/xe0.pcapng -b filesize:100000 -b files:10
  uiod capture --config /etc/uiod/uiod.yaml -i xe0 --queue 1 -s 128 -P -w xe0.pcap`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sock, err := controlSocket(g.root, cfgPath, stateDir, cmd.Flags().Changed("state-dir"))
			if err != nil {
				return err
			}
			if list {
				if len(ports) > 0 || out != "" {
					return usagef("-D lists the ports: give it without -i and -w")
				}
				infos, err := capture.List(cmd.Context(), sock)
				if err != nil {
					return err
				}
				printPortList(cmd.OutOrStdout(), infos)
				return nil
			}
			if len(ports) == 0 {
				return usagef("-i/--port: give the port to capture (a name from the daemon's configuration; -D lists them)")
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
			if pcap && len(ports) > 1 {
				return usagef("-P: pcap holds one interface, %d ports given (use pcapng)", len(ports))
			}
			req := capture.Request{Op: "capture", Ports: ports, Direction: direction, Snaplen: snaplen, Count: count}
			if queue >= 0 {
				req.Queue = &queue
			}
			if duration > 0 {
				req.Duration = duration.String()
			}
			ocfg := capture.OutputConfig{Path: out, Stdout: cmd.OutOrStdout(), GroupRead: groupRead, Pcap: pcap}
			for _, b := range ring {
				if err := capture.ParseRingBuffer(&ocfg, b); err != nil {
					return asUsage(err)
				}
			}
			for _, a := range autostop {
				if err := capture.ParseAutostop(&ocfg, &req, a); err != nil {
					return asUsage(err)
				}
			}
			if filter != "" {
				if req.Filter, err = capture.CompileExpr(filter, snaplen); err != nil {
					return asUsage(err)
				}
				req.FilterText = filter
			}
			o, err := capture.NewOutput(ocfg)
			if err != nil {
				return asUsage(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sum, err := capture.Capture(ctx, sock, req, o)
			var ce *capture.Error
			if errors.As(err, &ce) && ce.Usage {
				return asUsage(err)
			}
			if err != nil {
				return err
			}
			if !quiet {
				printCaptureSummary(cmd.ErrOrStderr(), sum)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&ports, "port", "i", nil, "port to capture, by its configuration name (repeat for more)")
	f.BoolVarP(&list, "list-interfaces", "D", false, "list the daemon's ports and exit")
	f.IntVar(&queue, "queue", -1, "capture only this queue number (-1: every queue)")
	f.StringVar(&direction, "direction", "both", "rx, tx or both")
	f.StringVarP(&filter, "filter", "f", "", "capture filter, pcap-filter(7) syntax (compiled by tcpdump)")
	f.Uint64VarP(&count, "count", "c", 0, "stop after this many frames (0: no limit)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: until interrupted)")
	f.IntVarP(&snaplen, "snaplen", "s", 0, fmt.Sprintf("bytes kept of each frame (0: %d)", capture.DefaultSnaplen))
	f.StringVarP(&out, "write", "w", "", "file to write, - for standard output")
	f.BoolVarP(&groupRead, "group-read", "g", false, "create files 0640 instead of 0600")
	f.BoolVarP(&pcap, "pcap", "P", false, "write pcap (nanosecond) instead of pcapng; one port only")
	f.BoolVarP(&quiet, "quiet", "q", false, "print no summary")
	f.StringArrayVarP(&ring, "ring-buffer", "b", nil, "ring-buffer files: filesize:KB, files:N, duration:SECONDS (repeat)")
	f.StringArrayVarP(&autostop, "autostop", "a", nil, "stop on duration:SECONDS, packets:N, filesize:KB, files:N (repeat)")
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
	h, err := pcihost.New(root)
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
	if len(sum.Files) > 1 {
		fmt.Fprintf(w, "files: %s\n", strings.Join(sum.Files, " "))
	}
	if sum.Ended != "" {
		fmt.Fprintf(w, "ended: %s\n", sum.Ended)
	}
}

// printPortList prints -D's list as dumpcap does: a numbered line per port.
func printPortList(w io.Writer, ports []capture.PortInfo) {
	for i, p := range ports {
		link := "link down"
		if p.LinkUp {
			link = "link up"
			if p.SpeedMbps > 0 {
				link = fmt.Sprintf("link up %d Mb/s", p.SpeedMbps)
			}
		}
		busy := ""
		if p.Capturing {
			busy = ", being captured"
		}
		fmt.Fprintf(w, "%d. %s (%s, %s, %s, %d RX / %d TX queues%s)\n", i+1, p.Name, p.MAC, p.Driver, link, p.RxQueues, p.TxQueues, busy)
	}
}

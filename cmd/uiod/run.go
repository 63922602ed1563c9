package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/nic/afxdp"
	"github.com/uiod/uiod/nic/tap"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Run the dataplane daemon from a YAML configuration",
		Long: `Run opens every configured port, starts the poll threads and serves Prometheus
metrics and a JSON /status page. Under systemd (Type=notify) it reports READY=1 once the
ports are up and the poll threads run.

SIGHUP reloads: the file is read and validated again, and the log level, the metrics
endpoint (metrics.listen, rebound) and the idle policy with its parameters (poll.*) change
at once; a change that needs a restart (ports, queues, rings, forward, poll.cpus,
state_dir...) is logged by its key and the daemon keeps running as it was; a file that
does not validate is logged and ignored.

SIGINT, SIGTERM or SIGQUIT shuts it down in order: poll loops stopped, queues stopped,
interrupts masked, bus mastering off, then DMA memory freed. SIGQUIT first writes every
goroutine's stack to standard error. A second signal exits at once.

As a user other than root, a configuration of sim ports only that sets no state_dir keeps
its pid file in $XDG_RUNTIME_DIR/uiod.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfgPath == "" {
				return usagef("run: --config FILE is required (see uiod config example)")
			}
			loader := config.Loader{Root: g.root}
			cfg, err := loader.Load(cfgPath)
			if err != nil {
				return configLoadError(cfgPath, err)
			}
			opts := daemon.Options{Root: g.root, Log: g.log, Version: version, Revision: buildRevision()}
			if !cmd.Flags().Changed("log-level") && !cmd.Flags().Changed("log-format") {
				if l, lvl, err := newLeveledLogger(cfg.Log.Level, cfg.Log.Format); err == nil {
					opts.Log, opts.LogLevel = l, lvl
				}
			}
			var reload func() (*config.Config, error)
			if cfgPath != "-" {
				reload = func() (*config.Config, error) { return loader.Load(cfgPath) }
			}
			return runDaemon(cfg, opts, reload)
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file (\"-\" for standard input)")
	return cmd
}

// runDaemon starts the daemon, reloads it on SIGHUP (with reload; nil: cannot) and
// blocks until a signal asks it to stop.
func runDaemon(cfg *config.Config, opts daemon.Options, reload func() (*config.Config, error)) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, daemon.Signals...)
	defer signal.Stop(sigs)

	log := opts.Log
	log.Info("uiod starting", zap.String("version", opts.Version), zap.String("revision", opts.Revision),
		zap.String("go", runtime.Version()), zap.Int("ports", len(cfg.Ports)), zap.String("state_dir", cfg.StateDir))
	d := daemon.New(cfg, opts)
	if err := d.Start(); err != nil {
		if errors.Is(err, tap.ErrUnavailable) {
			return asUsage(err) // a kernel.tap the host has otherwise: configuration
		}
		if afxdp.IsUsage(err) {
			return asUsage(err) // an af_xdp interface the host has otherwise
		}
		return err
	}
	sig := d.Serve(sigs, reload)
	if sig == syscall.SIGQUIT {
		// SIGQUIT is how a Go program is asked for its goroutines: dump them as the
		// runtime would, then shut down in order instead of exiting with the NIC running.
		os.Stderr.Write(goroutineStacks())
	}
	log.Info("shutting down", zap.String("signal", sig.String()))
	go func() {
		s := <-sigs
		log.Warn("second signal: exiting at once", zap.String("signal", s.String()))
		_ = log.Sync()
		os.Exit(exitFailure)
	}()
	if err := d.Stop(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped cleanly")
	return nil
}

// goroutineStacks returns the stack of every goroutine.
func goroutineStacks() []byte {
	for n := 1 << 16; ; n *= 2 {
		buf := make([]byte, n)
		if m := runtime.Stack(buf, true); m < n {
			return buf[:m]
		}
	}
}

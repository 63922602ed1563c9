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
	"github.com/uiod/uiod/nic/tap"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Run the dataplane daemon from a YAML configuration",
		Long: `Run opens every configured port, starts the poll threads and serves Prometheus
metrics and a JSON /status page. SIGINT, SIGTERM, SIGHUP or SIGQUIT shuts it down in
order: poll loops stopped, queues stopped, interrupts masked, bus mastering off, then DMA
memory freed. SIGQUIT first writes every goroutine's stack to standard error. A second
signal exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfgPath == "" {
				return usagef("run: --config FILE is required (see uiod config example)")
			}
			cfg, err := config.Loader{Root: g.root}.Load(cfgPath)
			if err != nil {
				return configLoadError(cfgPath, err)
			}
			log := g.log
			if !cmd.Flags().Changed("log-level") && !cmd.Flags().Changed("log-format") {
				if l, err := newLogger(cfg.Log.Level, cfg.Log.Format); err == nil {
					log = l
				}
			}
			return runDaemon(cfg, log, g.root)
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "", "configuration file (\"-\" for standard input)")
	return cmd
}

// runDaemon starts the daemon and blocks until a signal asks it to stop.
func runDaemon(cfg *config.Config, log *zap.Logger, root string) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, daemon.ShutdownSignals...)
	defer signal.Stop(sigs)

	d := daemon.New(cfg, daemon.Options{Root: root, Log: log})
	if err := d.Start(); err != nil {
		if errors.Is(err, tap.ErrUnavailable) {
			return asUsage(err) // a kernel.tap the host has otherwise: configuration
		}
		return err
	}
	sig := <-sigs
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

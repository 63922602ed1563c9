// Command uiod binds PCI NICs to userspace drivers and runs a poll-mode dataplane on them
// that sleeps on interrupts when traffic stops.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Exit codes, the same for every command.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // bad flags, arguments or configuration: nothing was touched
)

// usageError marks an error as the user's input being wrong (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// asUsage wraps err as a usage error (exit 2); nil stays nil.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// globals are the flags every command has.
type globals struct {
	root      string
	logLevel  string
	logFormat string
	log       *zap.Logger
}

var g globals

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "uiod",
		Short:         "Userspace PCI NIC driver stack with interrupt-assisted polling",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.root == "" {
				g.root = "/"
			}
			l, err := newLogger(g.logLevel, g.logFormat)
			if err != nil {
				return asUsage(err)
			}
			g.log = l
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return asUsage(err) })
	pf := root.PersistentFlags()
	def := os.Getenv("UIOD_ROOT")
	if def == "" {
		def = "/"
	}
	pf.StringVar(&g.root, "root", def, "prefix for every host path read or written (sys/, proc/, dev/, run/); env UIOD_ROOT")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "console", "log format: console or json")
	for _, f := range commands {
		root.AddCommand(f())
	}
	return root
}

// commands are the subcommand constructors; each command's file adds its own in init.
var commands []func() *cobra.Command

func newLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	var cfg zap.Config
	switch format {
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	case "json":
		cfg = zap.NewProductionConfig()
	default:
		return nil, fmt.Errorf("--log-format: %q is not console or json", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	return cfg.Build()
}

func init() {
	commands = append(commands, func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				v := "(devel)"
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
					v = bi.Main.Version
				}
				fmt.Fprintln(cmd.OutOrStdout(), "uiod", v)
				return nil
			},
		}
	})
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI with args and returns the process exit code.
func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if g.log != nil {
		_ = g.log.Sync()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "uiod:", err)
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own argument and command errors, which are plain errors.
// Their text starts with one of these prefixes; a command's own error that merely contains
// such words (a wrapped EINVAL reads "invalid argument") is a failure, not a usage error.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command ", "unknown flag: ", "unknown shorthand flag: ", "accepts ", "requires at least ", "requires at most ", `invalid argument "`, "flag needs an argument: ", "required flag(s) "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

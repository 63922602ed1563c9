// Command uiod binds PCI NICs to userspace drivers and runs a poll-mode dataplane on them
// that sleeps on interrupts when traffic stops.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/uiod/uiod/internal/clip"
	_ "github.com/uiod/uiod/nic/drivers" // the program's NIC drivers, the one place they are registered
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

// globals are the flags every command has, and the logger built from them. newRootCmd
// makes one and hands it to every command's constructor; the flags are parsed, and log
// set, before any command runs.
type globals struct {
	root      string
	logLevel  string
	logFormat string
	log       *zap.Logger
}

// newRootCmd builds the command tree around g.
func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "uiod",
		Short:         "Userspace PCI NIC driver stack with interrupt-assisted polling",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, args []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if g.root == "" {
				return usagef("--root: empty; give / for the host itself, or the prefix of a test tree")
			}
			l, err := newLogger(g.logLevel, g.logFormat)
			if err != nil {
				return asUsage(err)
			}
			g.log = l
			return nil
		},
	}
	root.Version = version
	root.SetVersionTemplate(versionLine() + "\n")
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
		root.AddCommand(f(g))
	}
	// Cobra adds these when it executes; added now, their argument checks are typed too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	completionsToCommandOut(root)
	suggestSubcommands(root) // a word that is no subcommand: "did you mean", exit 2
	registerCompletions(root, g)
	addExamples(root)
	typeArgErrors(root)
	return root
}

// completionsToCommandOut makes `uiod completion SHELL` write to the command's output at
// run time: cobra's default completion commands bind the writer when they are created,
// which here is before a caller (a test, a man page generator) can redirect it.
func completionsToCommandOut(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		for _, sub := range c.Commands() {
			shell := sub.Name()
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				desc := true
				if f := cmd.Flags().Lookup("no-descriptions"); f != nil && f.Changed {
					desc = false
				}
				out, r := cmd.OutOrStdout(), cmd.Root()
				switch shell {
				case "bash":
					return r.GenBashCompletionV2(out, desc)
				case "zsh":
					return withDescriptions(desc, r.GenZshCompletion, r.GenZshCompletionNoDesc)(out)
				case "fish":
					return r.GenFishCompletion(out, desc)
				case "powershell":
					return withDescriptions(desc, r.GenPowerShellCompletionWithDesc, r.GenPowerShellCompletion)(out)
				}
				return usagef("completion: unknown shell %s", clip.Quote(shell))
			}
		}
	}
}

// withDescriptions returns with when desc is set, else without: the generators of the
// shells whose cobra API has one method per variant instead of a flag.
func withDescriptions(desc bool, with, without func(io.Writer) error) func(io.Writer) error {
	if desc {
		return with
	}
	return without
}

// typeArgErrors makes the argument checks of cmd and its subcommands return usage errors
// (exit 2): cobra's own checks (cobra.NoArgs, MinimumNArgs...) return plain errors.
func typeArgErrors(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error { return asUsage(check(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		typeArgErrors(sub)
	}
}

// commands are the subcommand constructors, one per command file; newRootCmd calls each
// with the shared globals.
var commands = []func(g *globals) *cobra.Command{
	newBindCmd,
	newCaptureCmd,
	newConfigCmd,
	newDevicesCmd,
	newLatencyCmd,
	newVersionCmd,
	newManCmd,
	newQuiesceCmd,
	newRunCmd,
	newStatusCmd,
	newUnbindCmd,
	newVFCmd,
}

func newLogger(level, format string) (*zap.Logger, error) {
	l, _, err := newLeveledLogger(level, format)
	return l, err
}

// newLeveledLogger is newLogger, also returning the level, which can be changed while
// the logger is in use.
func newLeveledLogger(level, format string) (*zap.Logger, *zap.AtomicLevel, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("--log-level %s: want debug, info, warn or error", clip.Quote(level))
	}
	var cfg zap.Config
	switch format {
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	case "json":
		cfg = zap.NewProductionConfig()
	default:
		return nil, nil, fmt.Errorf("--log-format: %s is not console or json", clip.Quote(format))
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	l, err := cfg.Build()
	if err != nil {
		return nil, nil, err
	}
	return l, &cfg.Level, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI with args and returns the process exit code.
func run(args []string) int {
	var g globals
	root := newRootCmd(&g)
	root.SetArgs(args)
	err := root.Execute()
	if g.log != nil {
		_ = g.log.Sync()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "uiod:", boundMessage(err.Error(), args, os.Environ()))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ie *interruptError
	if errors.As(err, &ie) {
		return exitInterrupted
	}
	return exitFailure
}

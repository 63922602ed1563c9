package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
)

func init() { commands = append(commands, newConfigCmd) }

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check daemon configuration files or print an example",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("config: want a subcommand: validate or example")
		},
	}
	cmd.AddCommand(newConfigValidateCmd(), newConfigExampleCmd())
	return cmd
}

func newConfigValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|- ...",
		Short: "Check configuration files as `uiod run` would load them",
		Long: `Check configuration files as "uiod run" would load them: YAML syntax, unknown keys,
types, and every rule, with UIOD_* environment overrides applied and CPUs checked against
this machine. "-" reads standard input.

Prints "FILE: ok" for a good file, and every problem of a bad one on standard error, one
per line, naming the key. Exits 2 if any file is bad.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, arg := range args {
				if !validateConfig(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), arg) {
					bad++
				}
			}
			switch {
			case bad == 0:
				return nil
			case len(args) == 1:
				return usagef("%s: invalid configuration", configName(args[0]))
			}
			return usagef("%d of %d configuration files are invalid", bad, len(args))
		},
	}
}

// validateConfig loads one file ("-" for stdin), reports the result and says whether
// the file is good.
func validateConfig(stdout, stderr io.Writer, stdin io.Reader, arg string) bool {
	name := configName(arg)
	var err error
	if arg == "-" {
		_, err = config.Read(stdin)
	} else {
		_, err = config.Load(arg)
	}
	var ve *config.ValidationError
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "%s: ok\n", name)
		return true
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			fmt.Fprintf(stderr, "%s: %v\n", name, fe)
		}
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
	}
	return false
}

func configName(arg string) string {
	if arg == "-" {
		return "<stdin>"
	}
	return arg
}

func newConfigExampleCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "example",
		Short: "Print a complete, commented configuration that validates",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), config.Example())
			return err
		},
	}
}

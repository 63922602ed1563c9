package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/internal/clip"
)

// suggestSubcommands makes every command that has subcommands refuse a word that is none
// of them with cobra's "did you mean" list (exit 2): cobra itself suggests only where a
// command has no argument check of its own.
func suggestSubcommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() {
		cmd.Args = unknownSubcommand
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only where it suggests itself
		}
		if !cmd.Runnable() { // cobra checks no arguments of a command that cannot run
			cmd.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
		}
	}
	for _, sub := range cmd.Commands() {
		suggestSubcommands(sub)
	}
}

// unknownSubcommand is the argument check of a command that takes only subcommands.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := "unknown command " + clip.Quote(args[0]) + " for \"" + cmd.CommandPath() + "\""
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usagef("%s\n\nRun '%s --help' for the commands.", msg, cmd.CommandPath())
}

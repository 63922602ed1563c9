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

// wantSubcommand is the RunE of a command that only holds subcommands, run without one:
// a usage error that names them ("vf: want a subcommand: create, list or remove").
func wantSubcommand(cmd *cobra.Command, _ []string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return usagef("%s: want a subcommand: %s", cmd.Name(), list)
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

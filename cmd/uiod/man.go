package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/uiod/uiod/internal/clip"
)

func newManCmd(*globals) *cobra.Command {
	var section string
	cmd := &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page for every command into DIR",
		Long: `Man writes one roff man page per command (uiod.8, uiod-run.8, uiod-config-validate.8, ...)
into DIR, creating it, from the same text as --help. The pages are dated
SOURCE_DATE_EPOCH when it is set (reproducible builds), else today.

Shell completions come from "uiod completion bash|zsh|fish".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			date := time.Now()
			if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
				sec, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return usagef("SOURCE_DATE_EPOCH %s: not a number of seconds", clip.Quote(s))
				}
				date = time.Unix(sec, 0).UTC()
			}
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{Title: "UIOD", Section: section, Date: &date, Source: "uiod " + buildVersion(), Manual: "uiod manual"}
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&section, "section", "8", "manual section of the pages")
	return cmd
}

// buildVersion is the module version the binary was built from, "(devel)" for a
// work-tree build.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

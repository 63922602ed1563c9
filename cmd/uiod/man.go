package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/uiod/uiod/internal/clip"
)

func newManCmd(*globals) *cobra.Command {
	var section string
	cmd := &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page for every command, and uiod.yaml(5), into DIR",
		Long: `Man writes one roff man page per command (uiod.8, uiod-run.8, uiod-config-validate.8, ...)
into DIR, creating it, from the same text as --help, each with its own title and the
EXIT STATUS, ENVIRONMENT and FILES sections; and uiod.yaml.5, the configuration file's
page, generated from the configuration schema with each key's text from the commented
example ("uiod config example"). The pages are dated SOURCE_DATE_EPOCH when it is set
(reproducible builds), else today.

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
			hdr := doc.GenManHeader{Section: section, Date: &date, Source: "uiod " + buildVersion(), Manual: "uiod manual"}
			if err := writeManTree(root, hdr, dir); err != nil {
				return fmt.Errorf("man: %w", err)
			}
			page, err := configManPage(date, "uiod "+buildVersion())
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, configManName), []byte(page), 0o644)
			}
			if err != nil {
				return fmt.Errorf("man: %s: %w", configManName, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&section, "section", "8", "manual section of the command pages")
	return cmd
}

// writeManTree writes the page of cmd and of each of its available subcommands into
// dir, named by the command path (uiod-config-validate.8), titled by it
// (UIOD-CONFIG-VALIDATE), with the sections --help has not.
func writeManTree(cmd *cobra.Command, hdr doc.GenManHeader, dir string) error {
	for _, sub := range cmd.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeManTree(sub, hdr, dir); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	hdr.Title = "" // GenMan titles the page by the command path
	if err := doc.GenMan(cmd, &hdr, &b); err != nil {
		return err
	}
	page := withManSections(b.String(), manSections(cmd, hdr.Section))
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + "." + hdr.Section
	return os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644)
}

// withManSections puts the roff sections extra before SEE ALSO (at the end without one)
// and adds uiod.yaml(5) to SEE ALSO.
func withManSections(page, extra string) string {
	const seeAlso = ".SH SEE ALSO\n"
	before, after, ok := strings.Cut(page, seeAlso)
	if !ok {
		return page + extra + seeAlso + `\fBuiod.yaml(5)\fP` + "\n"
	}
	line, rest, _ := strings.Cut(after, "\n")
	return before + extra + seeAlso + line + `, \fBuiod.yaml(5)\fP` + "\n" + rest
}

// buildVersion is the module version the binary was built from, "(devel)" for a
// work-tree build.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

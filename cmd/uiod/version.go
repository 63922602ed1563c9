package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and revision are stamped at build time: make build and make deb pass
// -ldflags "-X main.version=... -X main.revision=..." (the package version, or git
// describe --always --dirty; and git describe --always --dirty). Unstamped, version is
// "dev" and revision the VCS revision the go command recorded, if any.
var (
	version  = "dev"
	revision = ""
)

// buildRevision is the revision the binary reports: the stamped one, else the VCS
// revision in the module's build information ("-dirty" when the tree was modified), else "".
func buildRevision() string {
	if revision != "" {
		return revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// versionLine is what `uiod version` and `uiod --version` print.
func versionLine() string {
	rev := buildRevision()
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("uiod %s (revision %s, %s %s/%s)", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// newVersionCmd builds `uiod version`.
func newVersionCmd(*globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Print the version (the package version, or git describe of the tree it was built
from; "dev" for a plain go build), the VCS revision, and the Go toolchain. uiod --version
prints the same line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

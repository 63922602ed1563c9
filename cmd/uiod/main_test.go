package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/uiod/uiod/internal/testutil"

	"github.com/spf13/cobra"
)

// uiodBinary builds the uiod binary once per test process and returns its path.
func uiodBinary(t *testing.T) string {
	return testutil.GoBuild(t, "github.com/uiod/uiod/cmd/uiod")
}

// runUIOD runs the uiod binary with args, stdin, and the test's environment without its
// UIOD_* variables plus env. It returns stdout, stderr and the exit code.
func runUIOD(t *testing.T, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(uiodBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "UIOD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("run uiod %v: %v", args, err)
	return "", "", -1
}

// TestExitCodes checks that cobra's own usage errors exit 2 and that a command's failure
// exits 1 even when its text contains or starts with words of a cobra message (EINVAL
// reads "invalid argument"): a failed sysfs write or ioctl is not a usage error, whatever
// it says. Usage errors are told by type, not by their text.
func TestExitCodes(t *testing.T) {
	failing := func(use string, err error) func(*globals) *cobra.Command {
		return func(*globals) *cobra.Command {
			return &cobra.Command{
				Use:  use,
				Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, args []string) error { return err },
			}
		}
	}
	fails := failing("test-fail", fmt.Errorf("bind 0000:03:00.0: probe vfio-pci: %w", syscall.EINVAL))
	failsLikeCobra := failing("test-fail-text", fmt.Errorf("accepts 1 arg(s), received 2 from the NIC's mailbox: %w", syscall.EIO))
	saved := commands
	commands = append(append([]func(*globals) *cobra.Command(nil), commands...), fails, failsLikeCobra)
	t.Cleanup(func() { commands = saved })
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"test-fail"}, exitFailure},
		{[]string{"test-fail-text"}, exitFailure},
		{[]string{"test-fail-text", "extra"}, exitUsage},
		{[]string{}, exitOK}, // help
		{[]string{"--root", "", "version"}, exitUsage},
		{[]string{"--root=", "devices"}, exitUsage},
		{[]string{"config", "bogus"}, exitUsage},
		{[]string{"config"}, exitUsage}, // wantSubcommand
		{[]string{"config", "validate", "a", "--bogus"}, exitUsage},
		{[]string{"completion", "bash", "extra"}, exitUsage},
		{[]string{"completion", "bash"}, exitOK},
		{[]string{"help", "config"}, exitOK},
		{[]string{"version"}, exitOK},
		{[]string{"no-such-command"}, exitUsage},
		{[]string{"devices", "extra"}, exitUsage},
		{[]string{"bind", "--driver", "vfio-pci"}, exitUsage},
		{[]string{"config", "validate"}, exitUsage},
		{[]string{"version", "--no-such-flag"}, exitUsage},
		{[]string{"run", "--config"}, exitUsage},
		{[]string{"latency", "--size", "x"}, exitUsage},
	}
	for _, tt := range tests {
		if got := run(tt.args); got != tt.want {
			t.Errorf("uiod %q: exit %d, want %d", tt.args, got, tt.want)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestManPages: `uiod man DIR` writes one page per command, dated SOURCE_DATE_EPOCH,
// naming every flag, and groff reads each without a warning.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man8")
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	if _, err := execUIOD(t, "man", dir); err != nil {
		t.Fatalf("uiod man: %v", err)
	}
	root := testRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		page := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".8")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
			return
		}
		s := string(b)
		title := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
		if !strings.Contains(s, `.TH "`+title+`" "8" "Jan 2026"`) {
			t.Errorf("%s: header is not titled %s and dated SOURCE_DATE_EPOCH:\n%.200s", page, title, s)
		}
		checkSections(t, page, s, ".SH NAME", ".SH SYNOPSIS", ".SH EXAMPLE", ".SH EXIT STATUS", ".SH ENVIRONMENT", ".SH FILES", ".SH SEE ALSO")
		if !strings.Contains(s, `\fBuiod.yaml(5)\fP`) || !strings.Contains(s, "UIOD_ROOT") {
			t.Errorf("%s: SEE ALSO has no uiod.yaml(5), or ENVIRONMENT no UIOD_ROOT", page)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			if !strings.Contains(s, `\fB--`+f.Name+`\fP`) {
				t.Errorf("%s does not describe --%s", page, f.Name)
			}
		})
		if strings.Contains(s, "Auto generated") {
			t.Errorf("%s carries cobra's auto-generated tag", page)
		}
		groffClean(t, page)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if _, err := execUIOD(t, "man"); err == nil {
		t.Error("uiod man without DIR succeeded")
	}
}

// TestCompletions: the completion scripts come from the same command tree.
func TestCompletions(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_uiod", "zsh": "#compdef uiod", "fish": "complete -c uiod"} {
		out, err := execUIOD(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("uiod completion %s: %v; output lacks %q", shell, err, want)
		}
	}
	// --no-descriptions picks each shell's script without descriptions.
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		desc, err := execUIOD(t, "completion", shell)
		if err != nil || strings.Contains(desc, "__completeNoDesc") {
			t.Errorf("uiod completion %s: %v; the script asks for completions without descriptions", shell, err)
		}
		noDesc, err := execUIOD(t, "completion", shell, "--no-descriptions")
		if err != nil || !strings.Contains(noDesc, "__completeNoDesc") {
			t.Errorf("uiod completion %s --no-descriptions: %v; the script asks for descriptions", shell, err)
		}
	}
	// The completion of a subcommand offers its flags.
	out, err := execUIOD(t, "__complete", "status", "--")
	if err != nil || !strings.Contains(out, "--watch") || !strings.Contains(out, "--metrics") {
		t.Errorf("completing `uiod status --`: %v\n%s", err, out)
	}
}

// groffClean checks that groff reads the page without a warning (where groff is
// installed); a line it cannot fill (a long default) is no fault of the page.
func groffClean(t *testing.T, page string) {
	t.Helper()
	groff, err := exec.LookPath("groff")
	if err != nil {
		return
	}
	out, err := exec.Command(groff, "-k", "-man", "-ww", "-z", page).CombinedOutput()
	var warnings []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !strings.HasSuffix(l, "cannot adjust line") {
			warnings = append(warnings, l)
		}
	}
	if err != nil || len(warnings) > 0 {
		t.Errorf("groff %s: %v\n%s", page, err, strings.Join(warnings, "\n"))
	}
}

// checkSections checks that page has each section, in order.
func checkSections(t *testing.T, name, page string, sections ...string) {
	t.Helper()
	at := 0
	for _, sec := range sections {
		i := strings.Index(page[at:], "\n"+sec+"\n")
		if i < 0 {
			t.Errorf("%s: no %s section after the %d-th byte", name, sec, at)
			return
		}
		at += i + 1
	}
}

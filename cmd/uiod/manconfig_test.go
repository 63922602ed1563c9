package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/testutil"
)

// TestConfigManPage: `uiod man DIR` writes uiod.yaml.5, titled UIOD.YAML in section 5,
// with an entry for every key of the configuration schema (sections as headings), each
// entry with its value in the example and a description; groff reads it cleanly.
func TestConfigManPage(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	if _, err := execUIOD(t, "man", dir); err != nil {
		t.Fatalf("uiod man: %v", err)
	}
	page := filepath.Join(dir, "uiod.yaml.5")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `.TH "UIOD.YAML" "5" "Jan 2026"`) {
		t.Errorf("header:\n%.200s", s)
	}
	checkSections(t, page, s, ".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH KEYS", ".SH ENVIRONMENT", ".SH FILES", ".SH SEE ALSO")
	keys := schemaKeys(reflect.TypeFor[config.Config](), "")
	for _, want := range []string{"log.level", "ports[].rx_ring", "ports[].wire", "poll.idle_threshold", "poll.housekeeping.hz", "memory.dma_limit"} {
		if !strings.Contains(strings.Join(keys, " "), want) {
			t.Errorf("schema keys %v lack %s", keys, want)
		}
	}
	docs, _, err := exampleDocs()
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(s, ".SH KEYS\n")
	body, _, _ = strings.Cut(body, ".SH ENVIRONMENT\n")
	entries := strings.Split(body, ".TP\n")
	for i, k := range keys {
		section := i+1 < len(keys) && (strings.HasPrefix(keys[i+1], k+".") || strings.HasPrefix(keys[i+1], k+"[]."))
		if !strings.Contains(k, ".") {
			if !strings.Contains(body, ".SS "+k+"\n") {
				t.Errorf("no heading for %s", k)
			}
			continue
		}
		var entry string
		for _, e := range entries {
			if strings.HasPrefix(e, `\fB`+k+`\fP`) {
				entry = e
			}
		}
		head, text, _ := strings.Cut(entry, "\n")
		switch {
		case entry == "":
			t.Errorf("no entry for %s", k)
		case strings.TrimSpace(strings.Split(text, ".SS")[0]) == "":
			t.Errorf("%s has no description", k)
		case docs[k] == nil && !strings.Contains(text, "Not in the example"):
			t.Errorf("%s is not in the example, and its entry does not say so: %q", k, text)
		case docs[k] == nil:
			t.Logf("%s is not in the example configuration", k)
		case !section && !strings.Contains(head, ": "):
			t.Errorf("%s has no example value: %q", k, head)
		}
	}
	testutil.TextContains(t, "page", s, `\fBports[].rx_ring\fP: 512`, `\fBpoll.cpus\fP: [0]`, "descriptors per queue", `As \fBrx_ring\fP.`,
		".nf\n  busy      keep polling", `\fBuiod-config-validate(8)\fP`)
	groffClean(t, page)
}

package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// configCommands are the commands that read a configuration file, where the UIOD_*
// overrides of its keys apply.
var configCommands = []string{"uiod", "uiod run", "uiod bind", "uiod unbind", "uiod quiesce", "uiod status",
	"uiod capture", "uiod config", "uiod config validate"}

// manSections returns the EXIT STATUS, ENVIRONMENT and FILES sections of cmd's page in
// roff.
func manSections(cmd *cobra.Command, section string) string {
	var b strings.Builder
	item := func(tag, text string) { b.WriteString(".TP\n" + tag + "\n" + text + "\n") }
	path := cmd.CommandPath()
	b.WriteString(".SH EXIT STATUS\n")
	item(`\fB0\fP`, "Success.")
	item(`\fB1\fP`, "The command ran and failed: a sysfs write, a device, the daemon not answering.")
	item(`\fB2\fP`, "Bad usage or configuration: a flag, an argument or a key is wrong, and nothing on the host was touched.")
	if path == "uiod latency" || path == "uiod" {
		item(`\fB130\fP`, `Interrupted by SIGINT (Ctrl-C) or SIGTERM: \fBuiod latency\fP prints and writes what it had measured, the run it was in cut short.`)
	}
	b.WriteString(".SH ENVIRONMENT\n")
	item(`\fBUIOD_ROOT\fP`, `The default of \fB--root\fP: a prefix for every host path read or written.`)
	for _, c := range configCommands {
		if c == path {
			item(`\fBUIOD_\fP\fIKEY\fP`, `Overrides a scalar key of the configuration outside ports: UIOD_ and the key in upper case with dots as underscores, e.g. UIOD_POLL_MODE=busy, UIOD_METRICS_LISTEN= (empty: off), UIOD_STATE_DIR; see \fBuiod.yaml\fP(5).`)
			break
		}
	}
	if path == "uiod man" {
		item(`\fBSOURCE_DATE_EPOCH\fP`, "Seconds since the epoch to date the pages with, for reproducible builds.")
	}
	b.WriteString(".SH FILES\n")
	item(`\fI/etc/uiod/uiod.yaml\fP`, `The packaged daemon configuration, \fBuiod.yaml\fP(5); \fBuiod status\fP reads metrics.listen from it.`)
	item(`\fI/run/uiod/\fP`, `The drivers \fBuiod bind\fP took functions from, for \fBuiod unbind --restore\fP; the daemon's state_dir and its locked uiod.pid.`)
	item(`\fI/sys/bus/pci/devices/\fP, \fI/sys/bus/pci/drivers/\fP`, `The PCI functions and drivers, read, and written by bind, unbind and quiesce (all under \fB--root\fP).`)
	item(`\fI/sys/class/net/\fP`, "The network interfaces, by which functions may be named.")
	item(`\fI/dev/vfio/\fP, \fI/dev/uio\fP\fIN\fP`, `The userspace driver nodes \fBuiod run\fP opens its ports through.`)
	item(`\fI/usr/share/misc/pci.ids\fP`, `Vendor and device names for \fBuiod devices\fP.`)
	return b.String()
}

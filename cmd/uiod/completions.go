package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/latency/simrig"
	"github.com/uiod/uiod/pci/pcihost"
)

// logLevels are the values --log-level takes.
var logLevels = []string{"debug", "info", "warn", "error"}

// userspaceDrivers are the drivers bind hands a NIC to for uiod.
var userspaceDrivers = []string{"vfio-pci", "uio_pci_generic"}

// registerCompletions gives the shell completions their values: --log-level and
// --log-format, --nic of latency, --driver of bind and devices, and the PCI functions
// (from the scan under --root) that bind, unbind, quiesce and devices take.
func registerCompletions(root *cobra.Command, g *globals) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	_ = root.RegisterFlagCompletionFunc("log-level", fixed(logLevels...))
	_ = root.RegisterFlagCompletionFunc("log-format", fixed("console", "json"))
	_ = root.RegisterFlagCompletionFunc("root", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	for _, c := range root.Commands() {
		switch c.Name() {
		case "latency":
			_ = c.RegisterFlagCompletionFunc("nic", fixed(simrig.NICs...))
		case "bind":
			_ = c.RegisterFlagCompletionFunc("driver", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return append(slices.Clone(userspaceDrivers), scanDrivers(g, false)...), cobra.ShellCompDirectiveNoFileComp
			})
		case "devices":
			_ = c.RegisterFlagCompletionFunc("driver", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return append(scanDrivers(g, true), noDriver), cobra.ShellCompDirectiveNoFileComp
			})
		}
		switch c.Name() {
		case "bind", "unbind", "quiesce", "devices":
			all := c.Name() == "devices" // devices takes any function, the others NICs
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				return scanAddrs(g, all, args), cobra.ShellCompDirectiveNoFileComp
			}
		}
	}
}

// completionScan scans the host under --root for a completion: no log (the command did
// not start), and nothing on an error (the shell shows no candidates).
func completionScan(g *globals, all bool) []pcihost.DeviceInfo {
	h, err := pcihost.New(g.root)
	if err != nil {
		return nil
	}
	devs, err := h.Scan(all)
	if err != nil {
		return nil
	}
	return devs
}

// scanAddrs lists the functions under --root (network ones unless all) not already in
// args, each with what it is as the shell's description.
func scanAddrs(g *globals, all bool, args []string) []string {
	var out []string
	for _, d := range completionScan(g, all) {
		if slices.Contains(args, d.Addr.String()) {
			continue
		}
		desc := []string{d.VendorID.String() + ":" + d.DeviceID.String()}
		if d.DeviceName != "" {
			desc[0] = d.DeviceName
		}
		if len(d.Interfaces) > 0 {
			desc = append(desc, "if="+strings.Join(d.Interfaces, ","))
		}
		if d.Driver != "" {
			desc = append(desc, "drv="+d.Driver)
		}
		out = append(out, d.Addr.String()+"\t"+strings.Join(desc, " "))
	}
	return out
}

// scanDrivers lists the drivers the functions under --root are bound to or came from,
// sorted, without the userspace ones unless withUserspace.
func scanDrivers(g *globals, withUserspace bool) []string {
	var out []string
	for _, d := range completionScan(g, withUserspace) {
		if d.Driver != "" && !slices.Contains(out, d.Driver) && (withUserspace || !d.IsUserspace()) {
			out = append(out, d.Driver)
		}
	}
	slices.Sort(out)
	return out
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

func newBindCmd(g *globals) *cobra.Command {
	var (
		driver  string
		cfgPath string
		opts    pcihost.BindOptions
		dryRun  bool
	)
	cmd := &cobra.Command{
		Use:   "bind --driver DRIVER [--force] [--dry-run] [--noiommu-mode] ADDR... | --config FILE",
		Short: "Bind PCI functions to vfio-pci, uio_pci_generic or a kernel driver",
		Long: `Bind each function to DRIVER (vfio-pci, uio_pci_generic, or a kernel driver to give
it back to the host). Every check runs before anything is touched: the function exists, is
a network controller (PCI class 02: a disk controller or GPU is refused, naming its class
and the driver it would lose) and not active (its interface has no route) unless --force,
and for vfio-pci the host has an IOMMU (or --noiommu-mode) and the function's IOMMU group
is viable. The original driver is recorded under <root>/run/uiod/ for "uiod unbind
--restore"; on any failure the functions are put back on their original drivers.
--dry-run prints the exact writes instead.
With --config, every PCI port of the configuration is bound to its driver (sim ports have
none), all as one plan: the same checks first, and each port's vendor:device must be one
its nic: drives; one rollback if any step fails. A configuration without PCI ports (the
packaged one, of sim ports) binds nothing and exits 0, saying what to edit.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfgPath != "" {
				if driver != "" || len(args) > 0 {
					return usagef("bind --config takes each port's driver from the configuration: no --driver, no addresses")
				}
				h, err := pciHost(g)
				if err != nil {
					return err
				}
				p, err := planBindConfig(g, h, cfgPath, opts)
				if err != nil {
					return err
				}
				if p == nil {
					noPCIPorts(g, "bind", cfgPath)
					return nil
				}
				return runPCIPlan(cmd, h, p, dryRun)
			}
			if len(args) == 0 {
				return usagef("bind: requires at least 1 arg(s): PCI addresses (or --config FILE)")
			}
			if driver == "" {
				return usagef("--driver is required: vfio-pci, uio_pci_generic, or a kernel driver name")
			}
			if err := pcihost.ValidDriverName(driver); err != nil {
				return asUsage(fmt.Errorf("--driver: %w", err))
			}
			addrs, err := parsePCIArgs(g, args)
			if err != nil {
				return err
			}
			h, err := pciHost(g)
			if err != nil {
				return err
			}
			p, err := h.PlanBind(addrs, driver, opts)
			if err != nil {
				return pciPlanError(err)
			}
			return runPCIPlan(cmd, h, p, dryRun)
		},
	}
	f := cmd.Flags()
	f.StringVar(&driver, "driver", "", "driver to bind to: vfio-pci, uio_pci_generic, or a kernel driver")
	f.BoolVar(&opts.Force, "force", false, "bind functions whose interfaces are active (have routes), or that are not network controllers")
	f.BoolVar(&dryRun, "dry-run", false, "print the writes that would be made, and make none")
	f.BoolVar(&opts.NoIOMMU, "noiommu-mode", false, "on a host without an IOMMU, enable vfio's UNSAFE no-IOMMU mode")
	f.StringVarP(&cfgPath, "config", "c", "", "bind every PCI port of this configuration to its driver")
	return cmd
}

// configPorts loads a configuration with l and returns its PCI ports' addresses by
// driver, in the configuration's order (sim ports have no function to bind); none is
// not an error (see noPCIPorts).
func configPorts(l config.Loader, path string) (map[string][]pci.Addr, []string, error) {
	cfg, err := l.Load(path)
	if err != nil {
		return nil, nil, configLoadError(path, err)
	}
	byDriver := map[string][]pci.Addr{}
	var drivers []string
	for _, p := range cfg.Ports {
		if !p.HasPCI() {
			continue
		}
		if _, ok := byDriver[p.Driver]; !ok {
			drivers = append(drivers, p.Driver)
		}
		byDriver[p.Driver] = append(byDriver[p.Driver], p.Addr())
	}
	return byDriver, drivers, nil
}

// noPCIPorts logs that the configuration at path has nothing for op to do, and what to
// edit: a configuration of sim ports only (the packaged one) makes bind and unbind a
// no-op, so that the systemd unit starts with it.
func noPCIPorts(g *globals, op, path string) {
	g.log.Info(fmt.Sprintf("%s has no PCI ports (only sim ports): nothing to %s; to drive a NIC, add a port with pci: ADDR and driver: vfio-pci (or uio_pci_generic) to %s", path, op, path))
}

// planBindConfig plans binding every PCI port of a configuration to its driver, as one
// plan (one rollback for all), after checking each port's device against its nic:. It
// returns a nil plan when the configuration has no PCI ports.
func planBindConfig(g *globals, h *pcihost.Host, path string, opts pcihost.BindOptions) (*pcihost.Plan, error) {
	byDriver, drivers, err := configPorts(config.Loader{Root: g.root, CheckDevices: true}, path)
	if err != nil || len(drivers) == 0 {
		return nil, err
	}
	var plans []*pcihost.Plan
	for _, drv := range drivers {
		p, err := h.PlanBind(byDriver[drv], drv, opts)
		if err != nil {
			return nil, pciPlanError(err)
		}
		plans = append(plans, p)
	}
	p, err := pcihost.JoinPlans(plans...)
	if err != nil {
		return nil, asUsage(fmt.Errorf("%s: %w", path, err))
	}
	return p, nil
}

// runPCIPlan prints the plan's warnings, then prints (dry run) or applies the plan.
func runPCIPlan(cmd *cobra.Command, h *pcihost.Host, p *pcihost.Plan, dryRun bool) error {
	stderr := cmd.ErrOrStderr()
	for _, w := range p.Warnings {
		writeWarning(stderr, w)
	}
	out := cmd.OutOrStdout()
	if dryRun {
		fmt.Fprintf(out, "# dry run: %s would make these changes\n%s", p.Op, p)
		return nil
	}
	if err := h.Apply(p); err != nil {
		return err
	}
	for _, d := range p.Devices {
		fmt.Fprintln(out, pciResultLine(p.Op, d))
	}
	return nil
}

func pciResultLine(op string, d pcihost.DevicePlan) string {
	name := func(s string) string {
		if s == "" {
			return "no driver"
		}
		return s
	}
	switch {
	case len(d.Writes) == 0 && !d.DropState:
		return fmt.Sprintf("%s: already on %s", d.Addr, name(d.From))
	case op == "unbind" && d.To == "" && !d.Verify:
		return fmt.Sprintf("%s: unbound from %s, kernel drivers probed", d.Addr, name(d.From))
	}
	return fmt.Sprintf("%s: %s -> %s", d.Addr, name(d.From), name(d.To))
}

// writeWarning prints a warning; the no-IOMMU one is framed so that nobody misses it.
func writeWarning(w io.Writer, msg string) {
	if msg == pcihost.WarnNoIOMMU {
		bar := strings.Repeat("!", 78)
		fmt.Fprintf(w, "%s\n!!! WARNING: %s\n%s\n", bar, msg, bar)
		return
	}
	fmt.Fprintf(w, "warning: %s\n", msg)
}

package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

func newQuiesceCmd(g *globals) *cobra.Command {
	var (
		cfgPath string
		dryRun  bool
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "quiesce [--dry-run] [--force] ADDR... | --config FILE",
		Short: "Stop NICs a dead uiod left programmed: bus mastering off, function reset",
		Long: `Quiesce turns bus mastering off in each function's PCI command register (through
its sysfs config file) and resets the function (sysfs reset), so that a NIC that a uiod
killed by SIGKILL, the OOM killer or a crash left with live rings stops writing to memory
the kernel has handed on. It needs nothing from the dead process. With --config it
quiesces every PCI port of the configuration, and refuses while a uiod run holds the
configuration's state_dir. Functions bound to a host driver are refused, and so are
functions that are not network controllers (PCI class 02) unless --force. --dry-run
prints the writes instead. The systemd unit runs it in ExecStopPost=.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			addrs, err := addrsOrConfig(g, "quiesce", cfgPath, args, "give PCI addresses or --config FILE", func() ([]pci.Addr, error) {
				return quiesceConfigPorts(g, cfgPath)
			})
			if err != nil {
				return err
			}
			if cfgPath != "" && len(addrs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "# %s has no PCI ports: nothing to quiesce\n", cfgPath)
				return nil
			}
			h, err := pciHost(g)
			if err != nil {
				return err
			}
			return runQuiesce(cmd, h, addrs, dryRun, force)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfgPath, "config", "c", "", "quiesce every PCI port of this configuration")
	f.BoolVar(&dryRun, "dry-run", false, "print the writes that would be made, and make none")
	f.BoolVar(&force, "force", false, "quiesce functions that are not network controllers")
	return cmd
}

// quiesceConfigPorts returns the PCI ports of the configuration at path, refusing while
// a uiod run holds its state_dir.
func quiesceConfigPorts(g *globals, path string) ([]pci.Addr, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, asUsage(fmt.Errorf("%s: %w", path, err))
	}
	if pid, running, err := daemon.RunningPID(g.root, cfg.StateDir); err != nil {
		return nil, fmt.Errorf("state_dir %s: %w", cfg.StateDir, err)
	} else if running {
		return nil, fmt.Errorf("uiod run (pid %d) is running on %s: stop it first (its shutdown quiesces the ports)", pid, path)
	}
	var addrs []pci.Addr
	for _, p := range cfg.Ports {
		if p.HasPCI() {
			addrs = append(addrs, p.Addr())
		}
	}
	return addrs, nil
}

// runQuiesce plans every function first (so a bad address, a host driver's function or,
// unless force, a function that is no NIC touches nothing), then prints or applies the
// plans.
func runQuiesce(cmd *cobra.Command, h *pcihost.Host, addrs []pci.Addr, dryRun, force bool) error {
	var plans []*pcihost.QuiescePlan
	for _, a := range addrs {
		if !force {
			if err := h.CheckNetworkClass(a, "quiesce it (bus master off, function reset)"); err != nil {
				return pciPlanError(err)
			}
		}
		p, err := h.PlanQuiesce(a)
		if err != nil {
			return pciPlanError(err)
		}
		plans = append(plans, p)
	}
	out := cmd.OutOrStdout()
	if dryRun {
		fmt.Fprintf(out, "# dry run: quiesce would make these changes\n")
		for _, p := range plans {
			fmt.Fprint(out, p)
		}
		return nil
	}
	var errs []error
	for _, p := range plans {
		if err := h.ApplyQuiesce(p); err != nil {
			errs = append(errs, err) // go on: every other function must still be stopped
			continue
		}
		reset := "reset"
		if p.ResetPath == "" {
			reset = "no reset attribute"
		}
		fmt.Fprintf(out, "%s: bus master off (command %#04x -> %#04x), %s\n", p.Addr, p.Command, p.NewCommand, reset)
	}
	return errors.Join(errs...)
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

func newUnbindCmd(g *globals) *cobra.Command {
	var (
		opts    pcihost.UnbindOptions
		cfgPath string
		dryRun  bool
	)
	cmd := &cobra.Command{
		Use:   "unbind [--restore] [--force] [--dry-run] ADDR... | --config FILE",
		Short: "Unbind PCI functions from their driver, optionally giving them back to the original one",
		Long: `Unbind each function from its driver and clear its driver_override. With --restore,
bind it again to the driver recorded when uiod bound it (or, without a record, let the
kernel pick one) and remove the record. Functions whose interfaces are active (or might
be: the route tables cannot be read) are refused unless --force. --dry-run prints the
exact writes instead. With --config, the functions are the configuration's PCI ports; a
configuration without any (only sim ports) unbinds nothing and exits 0.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			addrs, err := addrsOrConfig(g, "unbind", cfgPath, args, "requires at least 1 arg(s): PCI addresses (or --config FILE)", func() ([]pci.Addr, error) {
				byDriver, drivers, err := configPorts(config.Loader{Root: g.root}, cfgPath)
				var addrs []pci.Addr
				for _, d := range drivers {
					addrs = append(addrs, byDriver[d]...)
				}
				return addrs, err
			})
			if err != nil {
				return err
			}
			if cfgPath != "" && len(addrs) == 0 {
				noPCIPorts(g, "unbind", cfgPath)
				return nil
			}
			h, err := pciHost(g)
			if err != nil {
				return err
			}
			p, err := h.PlanUnbind(addrs, opts)
			if err != nil {
				return pciPlanError(err)
			}
			return runPCIPlan(cmd, h, p, dryRun)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Restore, "restore", false, "bind the driver recorded at bind time (or let the kernel pick)")
	f.BoolVar(&opts.Force, "force", false, "unbind functions whose interfaces are active (have routes)")
	f.BoolVar(&dryRun, "dry-run", false, "print the writes that would be made, and make none")
	f.StringVarP(&cfgPath, "config", "c", "", "unbind every PCI port of this configuration")
	return cmd
}

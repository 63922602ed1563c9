package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

func newVFCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vf create PF N | list [PF...] | remove PF",
		Short: "Create, list and remove SR-IOV virtual functions of a NIC",
		Long: `Manage the SR-IOV virtual functions (VFs) of a physical function (PF) through its
sriov_numvfs attribute, with the checks, dry run and rollback of bind: the PF exists, is a
network controller (unless --force), has SR-IOV (sriov_totalvfs) and a driver (the PF's
kernel driver, igb or ixgbe, creates the VFs). The kernel changes a VF count only from 0:
create on a PF that has VFs is refused, remove them first. remove refuses while a VF is
bound to a userspace driver or has an active interface, unless --force. A VF then binds
like any function (uiod bind --driver vfio-pci VF); uiod devices shows each VF with its PF.`,
		Example: `  uiod vf create --dry-run 0000:03:00.0 4   # the sysfs write it would make
  uiod vf create ens3f0 2                    # a PF by its interface name
  uiod vf list                               # every SR-IOV PF and its VFs
  uiod vf list --json 0000:03:00.0
  uiod vf remove 0000:03:00.0`,
		RunE: wantSubcommand,
	}
	for _, sub := range []*cobra.Command{newVFCreateCmd(g), newVFListCmd(g), newVFRemoveCmd(g)} {
		sub.ValidArgsFunction = completePFs(g, sub.Name() == "list")
		cmd.AddCommand(sub)
	}
	return cmd
}

// completePFs offers the functions with SR-IOV under --root as the PF argument (every
// argument of list, the first of create and remove), each described by its VF count.
func completePFs(g *globals, every bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && !every {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, d := range completionScan(g, true) {
			if d.SRIOV != nil {
				out = append(out, fmt.Sprintf("%s\t%s, %d of %d VFs", d.Addr, d.Driver, d.SRIOV.NumVFs, d.SRIOV.TotalVFs))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// vfPlanFlags are the flags of the vf subcommands that change a PF's VF count.
type vfPlanFlags struct {
	opts   pcihost.VFOptions
	dryRun bool
}

// add gives cmd --dry-run and --force, force saying what --force allows, and returns cmd.
func (f *vfPlanFlags) add(cmd *cobra.Command, force string) *cobra.Command {
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the write that would be made, and make none")
	cmd.Flags().BoolVar(&f.opts.Force, "force", false, force)
	return cmd
}

func newVFCreateCmd(g *globals) *cobra.Command {
	var f vfPlanFlags
	return f.add(&cobra.Command{
		Use:   "create [--dry-run] [--force] PF N",
		Short: "Give a physical function N virtual functions",
		Example: `  uiod vf create --dry-run 0000:03:00.0 4
  uiod vf create 0000:03:00.0 2 && uiod vf list 0000:03:00.0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 {
				return usagef("vf create: N %s is not a count of VFs (1 or more)", clip.Quote(args[1]))
			}
			return runVFPlan(cmd, g, args[0], f.dryRun, func(h *pcihost.Host, pf pci.Addr) (*pcihost.Plan, error) {
				return h.PlanVFs(pf, n, f.opts)
			})
		},
	}, "create VFs on a function that is not a network controller")
}

func newVFRemoveCmd(g *globals) *cobra.Command {
	var f vfPlanFlags
	return f.add(&cobra.Command{
		Use:     "remove [--dry-run] [--force] PF",
		Short:   "Remove every virtual function of a physical function",
		Example: `  uiod vf remove --dry-run 0000:03:00.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVFPlan(cmd, g, args[0], f.dryRun, func(h *pcihost.Host, pf pci.Addr) (*pcihost.Plan, error) {
				return h.PlanRemoveVFs(pf, f.opts)
			})
		},
	}, "remove VFs bound to a userspace driver or with active interfaces")
}

// runVFPlan resolves the PF argument, plans with plan and prints (dry run) or applies the
// plan, then prints the PF's VFs.
func runVFPlan(cmd *cobra.Command, g *globals, arg string, dryRun bool, plan func(*pcihost.Host, pci.Addr) (*pcihost.Plan, error)) error {
	addrs, err := parsePCIArgs(g, []string{arg})
	if err != nil {
		return err
	}
	h, err := pciHost(g)
	if err != nil {
		return err
	}
	p, err := plan(h, addrs[0])
	if err != nil {
		return pciPlanError(err)
	}
	out := cmd.OutOrStdout()
	if dryRun {
		fmt.Fprintf(out, "# dry run: vf would make these changes\n%s", p)
		return nil
	}
	if err := h.Apply(p); err != nil {
		return err
	}
	s, _, err := h.SRIOV(addrs[0])
	if err != nil {
		return fmt.Errorf("%s: %w", addrs[0], err)
	}
	if len(p.Writes()) == 0 {
		fmt.Fprintf(out, "%s: already has %d VFs, nothing to do\n", addrs[0], s.NumVFs)
		return nil
	}
	fmt.Fprintf(out, "%s: %d VFs\n", addrs[0], s.NumVFs)
	for i, vf := range s.VFs {
		fmt.Fprintf(out, "  vf%d %s\n", i, vf)
	}
	return nil
}

func newVFListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json] [PF...]",
		Short: "List SR-IOV physical functions and their virtual functions",
		Example: `  uiod vf list
  uiod vf list --json | jq '.[] | {address, num_vfs: .sriov.num_vfs}'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := pciHost(g)
			if err != nil {
				return err
			}
			pfs, err := listPFs(g, h, args)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(pfs)
			}
			writeVFList(cmd.OutOrStdout(), h, pfs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of the PFs as uiod devices --json describes them")
	return cmd
}

// listPFs describes the PFs named in args (each must have SR-IOV), or every function
// with SR-IOV when args is empty.
func listPFs(g *globals, h *pcihost.Host, args []string) ([]pcihost.DeviceInfo, error) {
	pfs := []pcihost.DeviceInfo{}
	if len(args) == 0 {
		devs, err := h.Scan(true)
		if err != nil {
			return nil, err
		}
		for _, d := range devs {
			if d.SRIOV != nil {
				pfs = append(pfs, d)
			}
		}
		return pfs, nil
	}
	addrs, err := parsePCIArgs(g, args)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		d, err := h.Device(a)
		if err != nil {
			return nil, pciPlanError(err)
		}
		if d.SRIOV == nil {
			return nil, usagef("%s has no SR-IOV capability (no sriov_totalvfs)", a)
		}
		pfs = append(pfs, d)
	}
	return pfs, nil
}

// writeVFList prints each PF and its VFs, one line each, VFs as uiod devices shows them.
func writeVFList(w io.Writer, h *pcihost.Host, pfs []pcihost.DeviceInfo) {
	if len(pfs) == 0 {
		fmt.Fprintln(w, "No SR-IOV physical functions found")
		return
	}
	for _, pf := range pfs {
		fmt.Fprintln(w, deviceLine(&pf))
		for i, vf := range pf.SRIOV.VFs {
			d, err := h.Device(vf)
			if err != nil {
				fmt.Fprintf(w, "  vf%d %s error=%q\n", i, vf, strings.ReplaceAll(err.Error(), "\n", "; "))
				continue
			}
			fmt.Fprintf(w, "  vf%d %s\n", i, deviceLine(&d))
		}
	}
}

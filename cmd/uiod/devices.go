package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// pciHost returns the host under --root, with pci.ids warnings going to the log and the
// daemon's files (config.StateFiles) admitted in a state directory. A root
// that is empty or not a directory is a usage error.
func pciHost(g *globals) (*pcihost.Host, error) {
	h, err := config.StateHost(g.root)
	if err != nil {
		return nil, asUsage(fmt.Errorf("--root: %w", err))
	}
	h.Warn = func(msg string) { g.log.Warn(msg) }
	return h, nil
}

// noDriver is the --driver value of `uiod devices` that selects functions without one.
const noDriver = "none"

func newDevicesCmd(g *globals) *cobra.Command {
	var all, asJSON, ifaces bool
	var driver string
	cmd := &cobra.Command{
		Use:   "devices [--all] [--driver NAME] [--json] [ADDR|IFACE...] | --interfaces [--json] [IFACE...]",
		Short: "List PCI network devices and the drivers they are bound to, or kernel interfaces for af_xdp",
		Long: `List PCI functions grouped like dpdk-devbind --status: bound to a userspace driver
(vfio-pci, uio_pci_generic), bound to a kernel driver (with its interfaces, and *Active* if
one has a route: the host is using it), and without a driver. Network controllers only,
unless --all. A function whose sysfs files cannot be read is listed with its error.
nic= names the uiod NIC driver that opens the function (ixgbe, igb, virtio); a function
pci.ids does not name is named by that driver. A virtual function shows its physical
function (pf=ADDR), a physical function with SR-IOV its VFs (vfs=NUM/TOTAL; uiod vf).

ADDR... lists only those functions (of any class), each a PCI address or a network
interface name (ens3f0); --driver NAME only the functions bound to NAME (none: without a
driver). A function that does not exist is an error (exit 2).

--interfaces lists instead the kernel's network interfaces in uiod's network namespace,
which a driver: af_xdp port takes (IFACE... only those; one that does not exist is an
error, exit 2), and what AF_XDP can do on each: xdp=native,generic when the driver's
netdev xdp-features have basic and redirect (generic works on any interface),
zerocopy=yes|no from xsk-zerocopy, queues= the RX queues a port binds by default, the
driver and PCI address, an XDP program already attached (prog=), and the raw
xdp-features. A kernel without the netdev generic netlink family (before 6.3) says
xdp=unknown zerocopy=unknown. These are the live host's, whatever --root says.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifaces {
				if all || driver != "" {
					return usagef("--interfaces lists kernel interfaces: --all and --driver are for PCI functions")
				}
				return listInterfaces(cmd.OutOrStdout(), args, asJSON)
			}
			if driver != "" && driver != noDriver {
				if err := pcihost.ValidDriverName(driver); err != nil {
					return asUsage(fmt.Errorf("--driver: %w", err))
				}
			}
			h, err := pciHost(g)
			if err != nil {
				return err
			}
			var want []pci.Addr
			for _, a := range args {
				addr, err := h.ParseFunction(a)
				if err != nil {
					return pciPlanError(err)
				}
				want = append(want, addr)
			}
			devs, err := h.Scan(all || len(want) > 0)
			if err != nil {
				return err
			}
			if devs, err = filterDevices(h, devs, want, driver); err != nil {
				return err
			}
			if asJSON {
				out := make([]deviceJSON, len(devs))
				for i := range devs {
					out[i] = deviceJSON{devs[i]}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			writeDeviceGroups(cmd.OutOrStdout(), devs, all || len(want) > 0)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list functions of every class, not only network controllers")
	cmd.Flags().StringVar(&driver, "driver", "", "list only the functions bound to this driver (none: without a driver)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of objects")
	cmd.Flags().BoolVar(&ifaces, "interfaces", false, "list the kernel's network interfaces and what AF_XDP can do on each (driver: af_xdp)")
	return cmd
}

// filterDevices keeps the functions in want (all when want is empty) bound to driver
// ("": any; noDriver: none), in want's order. A function of want the scan did not find
// is a usage error naming it.
func filterDevices(h *pcihost.Host, devs []pcihost.DeviceInfo, want []pci.Addr, driver string) ([]pcihost.DeviceInfo, error) {
	if len(want) > 0 {
		var picked []pcihost.DeviceInfo
		for _, a := range want {
			i := slices.IndexFunc(devs, func(d pcihost.DeviceInfo) bool { return d.Addr == a })
			if i < 0 {
				return nil, asUsage(fmt.Errorf("%s: %w (no %s)", a, pcihost.ErrNoDevice, h.DeviceDir(a)))
			}
			if !slices.ContainsFunc(picked, func(d pcihost.DeviceInfo) bool { return d.Addr == a }) {
				picked = append(picked, devs[i])
			}
		}
		devs = picked
	}
	if driver == "" {
		return devs, nil
	}
	if driver == noDriver {
		driver = ""
	}
	return slices.DeleteFunc(devs, func(d pcihost.DeviceInfo) bool { return d.Driver != driver }), nil
}

// writeDeviceGroups prints the functions in dpdk-devbind --status style.
func writeDeviceGroups(w io.Writer, devs []pcihost.DeviceInfo, all bool) {
	kind := "Network devices"
	if all {
		kind = "PCI devices"
	}
	groups := []struct {
		title string
		match func(d *pcihost.DeviceInfo) bool
	}{
		{kind + " using a userspace driver", func(d *pcihost.DeviceInfo) bool { return d.IsUserspace() }},
		{kind + " using a kernel driver", func(d *pcihost.DeviceInfo) bool { return d.Driver != "" && !d.IsUserspace() }},
		{kind + " without a driver", func(d *pcihost.DeviceInfo) bool { return d.Driver == "" }},
	}
	printed := false
	for _, grp := range groups {
		var lines []string
		for i := range devs {
			if grp.match(&devs[i]) {
				lines = append(lines, deviceLine(&devs[i]))
			}
		}
		if len(lines) == 0 {
			continue
		}
		if printed {
			fmt.Fprintln(w)
		}
		printed = true
		fmt.Fprintf(w, "%s\n%s\n", grp.title, strings.Repeat("=", len(grp.title)))
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if !printed {
		fmt.Fprintf(w, "No %s found\n", strings.ToLower(kind))
	}
}

// deviceLine formats one function, with the uiod NIC driver that opens it as nic=:
// 0000:01:00.0 '82599ES 10-Gigabit SFI/SFP+ Network Connection 10fb' if=eth0 drv=ixgbe numa=0 iommu=1 msix=64 nic=ixgbe *Active*
// A virtual function shows its PF (pf=0000:03:00.0), a PF with SR-IOV its VFs out of
// how many it may have (vfs=2/8).
// A function pci.ids does not name is named by that driver ('82576 10c9', 'virtio-net 1041').
func deviceLine(d *pcihost.DeviceInfo) string {
	var b strings.Builder
	drv, model := uiodNIC(d)
	name := d.DeviceName
	switch {
	case name != "":
		name += " " + d.DeviceID.String()
	case model != "":
		name = strings.TrimSpace(d.VendorName+" "+model) + " " + d.DeviceID.String()
	case d.VendorName != "":
		name = d.VendorName + " device " + d.DeviceID.String()
	default:
		name = d.VendorID.String() + ":" + d.DeviceID.String()
	}
	fmt.Fprintf(&b, "%s '%s'", d.Addr, name)
	if len(d.Interfaces) > 0 {
		fmt.Fprintf(&b, " if=%s", strings.Join(d.Interfaces, ","))
	}
	if d.Driver != "" {
		fmt.Fprintf(&b, " drv=%s", d.Driver)
	}
	if d.NUMANode >= 0 {
		fmt.Fprintf(&b, " numa=%d", d.NUMANode)
	}
	if d.IOMMUGroup >= 0 {
		fmt.Fprintf(&b, " iommu=%d", d.IOMMUGroup)
		if len(d.IOMMUGroupMembers) > 0 {
			m := make([]string, len(d.IOMMUGroupMembers))
			for i, a := range d.IOMMUGroupMembers {
				m[i] = a.String()
			}
			fmt.Fprintf(&b, "(+%s)", strings.Join(m, ","))
		}
	}
	if d.MSIXVectors > 0 {
		fmt.Fprintf(&b, " msix=%d", d.MSIXVectors)
	}
	if d.PhysFn != nil {
		fmt.Fprintf(&b, " pf=%s", d.PhysFn)
	}
	if d.SRIOV != nil {
		fmt.Fprintf(&b, " vfs=%d/%d", d.SRIOV.NumVFs, d.SRIOV.TotalVFs)
	}
	if drv != "" {
		fmt.Fprintf(&b, " nic=%s", drv)
	}
	if d.Active {
		b.WriteString(" *Active*")
	}
	if d.Err != nil {
		// The error already starts with the address; show what is wrong.
		msg := strings.TrimPrefix(d.Err.Error(), d.Addr.String()+": ")
		fmt.Fprintf(&b, " error=%q", strings.ReplaceAll(msg, "\n", "; "))
	}
	return b.String()
}

// uiodNIC returns the registered NIC driver that opens the function with nic: auto and
// its name for the device ("virtio", "virtio-net"), or "" for a function none supports.
func uiodNIC(d *pcihost.DeviceInfo) (driver, model string) {
	vendor, device := uint16(d.VendorID), uint16(d.DeviceID)
	drv, err := nic.Lookup(vendor, device, config.NICAuto)
	if err != nil {
		return "", ""
	}
	for _, id := range drv.Devices {
		if id.Vendor == vendor && id.Device == device {
			return drv.Name, id.Name
		}
	}
	return drv.Name, ""
}

// deviceJSON is a function as `uiod devices --json` prints it: its pcihost.DeviceInfo keys
// and "nic", the NIC driver that opens it ("" if none).
type deviceJSON struct{ pcihost.DeviceInfo }

// MarshalJSON appends the "nic" key to the DeviceInfo's object.
func (d deviceJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(d.DeviceInfo)
	if err != nil {
		return nil, err
	}
	drv, _ := uiodNIC(&d.DeviceInfo)
	v, err := json.Marshal(drv)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("device %s: json %q is not an object", d.Addr, b)
	}
	if len(b) > 2 {
		b = append(b[:len(b)-1], ',')
	} else {
		b = b[:1]
	}
	b = append(append(append(b, `"nic":`...), v...), '}')
	return b, nil
}

// parsePCIArgs parses the function arguments of bind, unbind and quiesce: PCI addresses
// or, as dpdk-devbind takes them, network interface names (ens3f0) resolved through
// <root>/sys/class/net. A bad one is a usage error.
func parsePCIArgs(g *globals, args []string) ([]pci.Addr, error) {
	var addrs []pci.Addr
	var h *pcihost.Host
	for _, s := range args {
		a, err := pci.ParseAddr(s)
		if err != nil {
			if h == nil {
				if h, err = pciHost(g); err != nil {
					return nil, err
				}
			}
			if a, err = h.ParseFunction(s); err != nil {
				return nil, pciPlanError(err)
			}
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// addrsOrConfig returns the PCI functions a command acts on: the addresses or interface
// names in args, or the ones fromConfig reads from the --config file cfgPath. Both is a
// usage error, and so is neither (with the message missing), each prefixed with the
// command's name.
func addrsOrConfig(g *globals, name, cfgPath string, args []string, missing string, fromConfig func() ([]pci.Addr, error)) ([]pci.Addr, error) {
	switch {
	case cfgPath != "" && len(args) > 0:
		return nil, usagef("%s: give addresses or --config, not both", name)
	case cfgPath != "":
		return fromConfig()
	case len(args) == 0:
		return nil, usagef("%s: %s", name, missing)
	}
	return parsePCIArgs(g, args)
}

// pciPlanError turns an error of planning (nothing was touched) into the command's error:
// a missing device or a refusal is the user's to fix (exit 2), anything else is a failure.
func pciPlanError(err error) error {
	if errors.Is(err, pcihost.ErrNoDevice) || errors.Is(err, pcihost.ErrRefused) || errors.Is(err, pci.ErrBadAddr) {
		return asUsage(err)
	}
	return err
}

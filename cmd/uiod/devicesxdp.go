package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/uiod/uiod/nic/afxdp"
)

// listInterfaces prints the kernel's network interfaces (those named in want, all when
// it is empty) and what AF_XDP can do on each, as text or JSON. A name in want that is
// not an interface is a usage error.
func listInterfaces(w io.Writer, want []string, asJSON bool) error {
	l, err := afxdp.ListInterfaces()
	if err != nil {
		return err
	}
	ifs, err := pickInterfaces(l.Interfaces, want)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]interfaceJSON, len(ifs))
		for i := range ifs {
			out[i] = newInterfaceJSON(&ifs[i], l.FeaturesErr)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	writeInterfaces(w, ifs, l.FeaturesErr)
	return nil
}

// pickInterfaces keeps the interfaces named in want, in want's order (all when empty).
func pickInterfaces(ifs []afxdp.Interface, want []string) ([]afxdp.Interface, error) {
	if len(want) == 0 {
		return ifs, nil
	}
	var out []afxdp.Interface
	for _, n := range want {
		i := slices.IndexFunc(ifs, func(f afxdp.Interface) bool { return f.Name == n })
		if i < 0 {
			return nil, usagef("%s: no such network interface here (ip link)", n)
		}
		if !slices.ContainsFunc(out, func(f afxdp.Interface) bool { return f.Name == n }) {
			out = append(out, ifs[i])
		}
	}
	return out, nil
}

// writeInterfaces prints one line per interface under a title, then why the
// capabilities are unknown if they are.
func writeInterfaces(w io.Writer, ifs []afxdp.Interface, featuresErr error) {
	const title = "Kernel network interfaces (driver: af_xdp)"
	if len(ifs) == 0 {
		fmt.Fprintln(w, "No network interfaces found")
		return
	}
	fmt.Fprintf(w, "%s\n%s\n", title, strings.Repeat("=", len(title)))
	for i := range ifs {
		fmt.Fprintln(w, interfaceLine(&ifs[i]))
	}
	if featuresErr != nil {
		fmt.Fprintf(w, "\nxdp and zerocopy unknown: %v\n", featuresErr)
	}
}

// interfaceLine formats one interface:
// eth0 kind=device drv=ixgbe pci=0000:01:00.0 mac=... mtu=1500 up queues=8 xdp=native,generic zerocopy=yes features=basic,redirect,...
func interfaceLine(f *afxdp.Interface) string {
	var b strings.Builder
	b.WriteString(f.Name)
	fmt.Fprintf(&b, " kind=%s", f.Kind)
	if f.Driver != "" {
		fmt.Fprintf(&b, " drv=%s", f.Driver)
	}
	if f.PCI != "" {
		fmt.Fprintf(&b, " pci=%s", f.PCI)
	}
	if f.MAC != "" {
		fmt.Fprintf(&b, " mac=%s", f.MAC)
	}
	fmt.Fprintf(&b, " mtu=%d", f.MTU)
	switch {
	case f.Running:
		b.WriteString(" up")
	case f.Up:
		b.WriteString(" up,no-carrier")
	default:
		b.WriteString(" down")
	}
	if f.RxQueues > 0 {
		fmt.Fprintf(&b, " queues=%d", f.RxQueues)
	}
	modes, zc := xdpModes(f)
	fmt.Fprintf(&b, " xdp=%s zerocopy=%s", strings.Join(modes, ","), zc)
	if f.Features != nil {
		names := f.Features.XDP.Names()
		if len(names) == 0 {
			names = []string{"none"}
		}
		fmt.Fprintf(&b, " features=%s", strings.Join(names, ","))
	}
	if f.Program != "" {
		fmt.Fprintf(&b, " prog=%q", f.Program)
	}
	return b.String()
}

// xdpModes returns the attach modes an af_xdp port can use on f and whether zero-copy
// is offered: yes, no, or unknown without xdp-features.
func xdpModes(f *afxdp.Interface) (modes []string, zerocopy string) {
	if f.Features == nil {
		return []string{"unknown"}, "unknown"
	}
	if f.Features.XDP.Native() {
		modes = append(modes, "native")
	}
	modes = append(modes, "generic")
	zerocopy = "no"
	if f.Features.XDP.ZeroCopy() {
		zerocopy = "yes"
	}
	return modes, zerocopy
}

// interfaceJSON is an interface as `uiod devices --interfaces --json` prints it. The
// capabilities are null when the kernel could not say (features_error says why).
type interfaceJSON struct {
	Name          string   `json:"name"`
	Index         int      `json:"index"`
	Kind          string   `json:"kind"`
	Driver        string   `json:"driver"`
	PCI           string   `json:"pci"`
	MAC           string   `json:"mac"`
	MTU           int      `json:"mtu"`
	Up            bool     `json:"up"`
	Running       bool     `json:"running"`
	RxQueues      int      `json:"rx_queues"`
	Native        *bool    `json:"xdp_native"`
	ZeroCopy      *bool    `json:"xdp_zerocopy"`
	XDPFeatures   []string `json:"xdp_features"`
	ZCMaxSegs     *uint32  `json:"xdp_zc_max_segs"`
	Program       string   `json:"xdp_program"`
	FeaturesError string   `json:"features_error,omitempty"`
}

func newInterfaceJSON(f *afxdp.Interface, featuresErr error) interfaceJSON {
	j := interfaceJSON{
		Name: f.Name, Index: f.Index, Kind: f.Kind, Driver: f.Driver, PCI: f.PCI, MAC: f.MAC, MTU: f.MTU,
		Up: f.Up, Running: f.Running, RxQueues: f.RxQueues, Program: f.Program,
	}
	if ft := f.Features; ft != nil {
		native, zc, segs := ft.XDP.Native(), ft.XDP.ZeroCopy(), ft.XDPZCMaxSegs
		j.Native, j.ZeroCopy, j.ZCMaxSegs, j.XDPFeatures = &native, &zc, &segs, ft.XDP.Names()
	} else if featuresErr != nil {
		j.FeaturesError = featuresErr.Error()
	} else {
		j.FeaturesError = "the kernel's dev-get did not list the interface"
	}
	return j
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/latency"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/vfio"
)

// parsePortsFlag checks --ports: two different PCI functions.
func parsePortsFlag(s string) ([2]pci.Addr, error) {
	var addrs [2]pci.Addr
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return addrs, usagef("--ports: %s: want two PCI addresses, TX,RX", clip.Quote(s))
	}
	for i, p := range parts {
		a, err := pci.ParseAddr(strings.TrimSpace(p))
		if err != nil {
			return addrs, usagef("--ports: %v", err)
		}
		addrs[i] = a
	}
	if addrs[0] == addrs[1] {
		return addrs, usagef("--ports: %s twice: the probes must leave by one NIC and come back on another", addrs[0])
	}
	return addrs, nil
}

// runLatencyPorts measures with the generator driving two NICs on vfio-pci itself
// (--ports TX,RX): software timestamps as its poll sees the probes and, with hw, the
// NICs' own TX and RX stamps on their clocks; a NIC that cannot timestamp is reported and
// the run has software figures only.
func runLatencyPorts(ctx context.Context, cmd *cobra.Command, g *globals, addrs [2]pci.Addr, cfg latency.Config, hw bool, outs *latency.Outputs, human io.Writer) error {
	var wires [2]*latency.NICWire
	var drivers [2]string
	for i, a := range addrs {
		dev, err := vfio.Open(a, vfio.Options{Log: g.log})
		if err != nil {
			return fmt.Errorf("--ports: %s: %w", a, err)
		}
		p, d, err := nic.OpenDriver(dev, nic.DeviceID{}, "auto", nic.Config{Promiscuous: true, Interrupts: nic.IRQNone, LinkTimeout: 5 * time.Second})
		if err != nil {
			dev.Close()
			return fmt.Errorf("--ports: %w", err)
		}
		drivers[i] = d.Name
		if wires[i], err = latency.NewNICWire(p); err != nil {
			p.Close()
			return fmt.Errorf("--ports: %s: %w", a, err)
		}
		defer wires[i].Close()
	}
	progress := cmd.ErrOrStderr()
	if hw {
		ts0, err0 := wires[0].Timesync()
		ts1, err1 := wires[1].Timesync()
		if err := errors.Join(err0, err1); err != nil {
			fmt.Fprintf(progress, "latency: %v: no device clock to measure on, so software timestamps only\n", err)
		} else {
			d := &latency.DeviceClock{Tx: ts0, Rx: ts1}
			wires[0].SetStamps(d, true)
			wires[1].SetStamps(d, false)
			cfg.Stamps = d
		}
	}
	if cfg.Label == "" {
		cfg.Label = addrs[0].String() + "→" + addrs[1].String()
	}
	outs.Title = fmt.Sprintf("%s, %s", cfg.Label, cfg.Pattern)
	fmt.Fprintf(progress, "latency: %s (%s) → %s (%s) on vfio-pci, %s\n", addrs[0], drivers[0], addrs[1], drivers[1], cfg.Pattern)
	res, err := latency.Run(ctx, wires[0], wires[1], cfg)
	if err != nil {
		return err
	}
	if res.Sent == 0 {
		return fmt.Errorf("no probe could be sent on %s (%d send errors)", addrs[0], res.SendErrors)
	}
	fmt.Fprintln(human, res.MoonGen())
	if d := res.DeviceClock; d != nil {
		c := res.Clock
		fmt.Fprintln(human, d.MoonGen())
		fmt.Fprintf(human, "[%s] min %d ns, clock offset %d ns ± %d ns (drift %d ns, %.3f ppm, corrected over %d syncs), stamps lost: tx %d, rx %d\n",
			d.Label, d.MinNs, c.OffsetNs, c.ErrorNs, c.DriftNs, c.DriftPPM, c.Syncs, c.TxStampsLost, c.RxStampsLost)
	}
	if err := latency.WriteTable(human, []*latency.Result{res}); err != nil {
		return err
	}
	err = outputError(outs.WriteRuns(cmd.OutOrStdout(), latency.WithDeviceClock([]*latency.Result{res}), res))
	if ctx.Err() != nil {
		return interrupted(err, 1, 1)
	}
	return err
}

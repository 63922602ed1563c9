// Command flowcount is a small program that uses uiod as a library: it loads a daemon
// configuration, runs the daemon with its own dataplane.App — one that counts frames per
// IPv4 5-tuple and forwards them as l2fwd does — and serves the flow counts as a
// Prometheus metric beside the daemon's own.
//
//	go run ./examples/flowcount --sim            # two model NICs, generated traffic, then a report
//	go run ./examples/flowcount --config FILE    # your ports; Ctrl-C to stop
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	_ "github.com/uiod/uiod/nic/drivers" // the NIC drivers its sim (or PCI) ports open with
	"github.com/uiod/uiod/wire"
)

// simConfig is two model 82599 ports on in-memory wires whose far ends this program
// drives.
const simConfig = `
metrics: {listen: "127.0.0.1:0"}
state_dir: %q
ports:
  - {name: sim0, driver: sim, wire: "pair:flowcount0", promiscuous: true}
  - {name: sim1, driver: sim, wire: "pair:flowcount1", promiscuous: true}
forward: {mode: l2fwd, pairs: [[sim0, sim1]]}
poll: {mode: adaptive, idle_threshold: 300us}
`

func main() {
	cfgPath := flag.String("config", "", "uiod configuration file")
	sim := flag.Bool("sim", false, "run on two model NICs with generated traffic, print the flows and exit")
	flows := flag.Int("flows", 8, "--sim: how many flows to generate")
	frames := flag.Int("frames", 1000, "--sim: frames per flow")
	flag.Parse()
	if err := run(*cfgPath, *sim, *flows, *frames, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flowcount:", err)
		os.Exit(1)
	}
}

func run(cfgPath string, sim bool, flows, frames int, out io.Writer) error {
	var cfg *config.Config
	var err error
	switch {
	case sim && cfgPath == "":
		dir, derr := os.MkdirTemp("", "flowcount")
		if derr != nil {
			return derr
		}
		defer os.RemoveAll(dir)
		cfg, err = config.Read(strings.NewReader(fmt.Sprintf(simConfig, dir)))
	case cfgPath != "":
		cfg, err = config.Load(cfgPath)
	default:
		return fmt.Errorf("give --sim or --config FILE")
	}
	if err != nil {
		return err
	}
	app := newFlowApp(max(1, len(cfg.Poll.CPUs)), 4096)
	d := daemon.New(cfg, daemon.Options{App: app, Collectors: []prometheus.Collector{app}})
	if err := d.Start(); err != nil {
		return err
	}
	defer d.Stop()
	if !sim {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
		return nil
	}
	if err := generate(flows, frames); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-44s %s\n", "FLOW", "FRAMES")
	got := app.flows()
	keys := make([]flowKey, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].sport < keys[j].sport })
	for _, k := range keys {
		fmt.Fprintf(out, "%-44s %d\n", k, got[k])
	}
	// The same numbers as a Prometheus scrape sees them.
	resp, err := http.Get("http://" + d.MetricsAddr() + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "uiod_example_flows ") {
			fmt.Fprintln(out, "metric:", l)
		}
	}
	return nil
}

// generate sends frames UDP frames of each of flows flows into sim0's wire, from
// 10.0.0.1:1000+i to 10.0.1.1:53, and waits (bounded) until sim1 sent them all out.
func generate(flows, frames int) error {
	tx, err := wire.Open("pair:flowcount0")
	if err != nil {
		return err
	}
	defer tx.Close()
	rx, err := wire.Open("pair:flowcount1")
	if err != nil {
		return err
	}
	defer rx.Close()
	got := make(chan struct{}, 1024)
	rx.SetHandler(func([]byte, int64) { got <- struct{}{} })
	f := make([]byte, 60)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 46)
	copy(ip[12:], []byte{10, 0, 0, 1})
	copy(ip[16:], []byte{10, 0, 1, 1})
	binary.BigEndian.PutUint16(ip[22:], 53)
	deadline := time.After(30 * time.Second)
	for n := 0; n < frames; n++ {
		for i := 0; i < flows; i++ {
			binary.BigEndian.PutUint16(ip[20:], uint16(1000+i))
			if err := tx.Send(f); err != nil {
				return err
			}
			select {
			case <-got:
			case <-deadline:
				return fmt.Errorf("frames stopped coming back after %d", n*flows+i)
			}
		}
	}
	return nil
}

package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/wire"
)

// MinRing must be a ring every driver takes.
var _ [MinRing - nic.MinRing]struct{}

// MinRing is uiod's smallest ring, above the drivers' nic.MinRing: smaller rings only
// suit tests. The most queues and the largest ring are the port's NIC's (nicfacts.go);
// the poll section's limits are the idle policy's (see checkPolicy).
const MinRing = 64

// Synthetic addresses of sim ports without one: ffff:BB:DD.0.
const (
	simPCIDomain  = 0xffff
	maxSimDevices = 256 * 32
)

// Validate checks the configuration against this machine (see LocalHost). It returns nil
// or a *ValidationError listing every problem.
func (c *Config) Validate() error { return c.ValidateOn(LocalHost()) }

// ValidateOn checks the configuration against the described machine. It returns nil or a
// *ValidationError listing every problem, in schema order.
func (c *Config) ValidateOn(h Host) error {
	return c.check(h).err()
}

// check returns every problem, unsorted.
func (c *Config) check(h Host) fieldErrors {
	var errs fieldErrors
	oneOf(&errs, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf(&errs, "log.format", c.Log.Format, "console", "json")
	if l := c.Metrics.Listen; l != "" {
		if loopback, err := checkListen(l); err != nil {
			errs.add("metrics.listen", l, "%v (\"\" turns metrics off)", err)
		} else if !loopback && !c.Metrics.Public {
			errs.add("metrics.listen", l, "not a loopback address: the endpoint has no authentication; set metrics.public: true to serve it beyond this host")
		}
	}
	switch {
	case c.StateDir == "":
		errs.add("state_dir", nil, "required (default %s)", DefaultStateDir)
	case !filepath.IsAbs(c.StateDir) || strings.IndexByte(c.StateDir, 0) >= 0:
		errs.add("state_dir", c.StateDir, "must be an absolute path")
	case hasDotDot(c.StateDir):
		// Joined to a --root, "/../../x" would leave it.
		errs.add("state_dir", c.StateDir, "must not have \"..\" elements")
	default:
		if why := systemStateDir(c.StateDir); why != "" {
			errs.add("state_dir", c.StateDir, "is %s, not a directory of uiod's own: uiod creates and removes files in state_dir; give it one of its own, such as %s", why, DefaultStateDir)
		}
	}
	c.checkCapture(&errs)
	c.checkPorts(&errs)
	c.checkKernel(&errs)
	c.checkForward(&errs)
	c.checkPoll(&errs, h)
	c.checkDMA(&errs, h)
	c.checkModel(&errs, h)
	oneOf(&errs, "vfio.interface", c.VFIO.Interface, VFIOAuto, VFIOGroup, VFIOIOMMUFD)
	if c.Power.CPUDMALatency < -1 || c.Power.CPUDMALatency > math.MaxInt32 {
		// The kernel takes the latency as an s32; a larger value would wrap.
		errs.add("power.cpu_dma_latency", c.Power.CPUDMALatency, "must be -1 (off) or a latency in µs in [0, %d]", math.MaxInt32)
	}
	return errs
}

func (c *Config) checkPorts(errs *fieldErrors) {
	if len(c.Ports) == 0 {
		errs.add("ports", nil, "at least one port is required")
		return
	}
	names := map[string]int{}
	addrs := map[pci.Addr]int{}
	pairWires := map[string][]int{}
	sockets := map[string]int{}
	ifaces := map[string]int{}
	vhostSocks := map[string]int{}
	xdpIfaces := map[string]int{}
	for i := range c.Ports {
		p := &c.Ports[i]
		path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }

		if err := checkName(p.Name); err != nil {
			errs.add(path("name"), p.Name, "port name %v", err)
		} else if j, dup := names[p.Name]; dup {
			errs.add(path("name"), p.Name, "duplicate of ports[%d].name", j)
		} else {
			names[p.Name] = i
		}

		driverOK := oneOf(errs, path("driver"), p.Driver, DriverVFIO, DriverUIO, DriverSim, DriverVhostUser, DriverAFXDP)
		checkVhost(errs, i, p, vhostSocks)
		checkAFXDP(errs, i, p, xdpIfaces)
		nicOK := oneOf(errs, path("nic"), p.NIC, nicNames()...)

		switch {
		case p.PCI == "" && p.HasPCI():
			if driverOK {
				errs.add(path("pci"), nil, "required for %s ports (DDDD:BB:DD.F)", p.Driver)
			}
		case p.PCI != "":
			a, err := pci.ParseAddr(p.PCI)
			if err != nil {
				errs.add(path("pci"), p.PCI, "not a PCI address (want DDDD:BB:DD.F or BB:DD.F)")
			} else if j, dup := addrs[a]; dup {
				errs.add(path("pci"), p.PCI, "same function as ports[%d].pci", j)
			} else {
				addrs[a] = i
			}
		}

		c.checkWire(errs, i, driverOK, pairWires, sockets, ifaces)

		if nicOK {
			checkLimits(errs, i, p)
			if _, known := p.facts(); known {
				checkFacts(errs, i, p)
			} else if p.Driver != DriverVhostUser && p.Driver != DriverAFXDP && nonNegative(errs, path("itr"), p.ITR) {
				checkITR(errs, path("itr"), p)
			}
		}
		if p.Interrupts != "" && p.Driver != DriverVhostUser && p.Driver != DriverAFXDP && oneOf(errs, path("interrupts"), p.Interrupts, InterruptsMSIX, InterruptsINTx) &&
			p.Driver == DriverUIO && p.Interrupts != InterruptsINTx {
			errs.add(path("interrupts"), p.Interrupts, "uio_pci_generic only delivers intx")
		}
	}
}

func (c *Config) checkWire(errs *fieldErrors, i int, driverOK bool, pairWires map[string][]int, sockets, ifaces map[string]int) {
	p := &c.Ports[i]
	path := fmt.Sprintf("ports[%d].wire", i)
	w := p.Wire
	if w.Kind == "" {
		if p.Driver == DriverSim {
			errs.add(path, nil, "required for sim ports (pair:NAME, unix:LOCAL,REMOTE, afpacket:IFNAME or tap:IFNAME)")
		}
		return
	}
	if _, err := ParseWire(w.String()); err != nil {
		errs.add(path, w.String(), "%v", err)
		return
	}
	if p.Driver != DriverSim {
		if driverOK {
			errs.add(path, w.String(), "only sim ports have a wire; %s ports are cabled in hardware", p.Driver)
		}
		return
	}
	switch w.Kind {
	case wire.KindPair:
		ends := pairWires[w.Name]
		if len(ends) >= 2 {
			errs.add(path, w.String(), "wire already connects ports[%d] and ports[%d]; a wire has two ends", ends[0], ends[1])
			return
		}
		pairWires[w.Name] = append(ends, i)
	case wire.KindUnix:
		if j, dup := sockets[w.Local]; dup {
			errs.add(path, w.String(), "socket %s is already bound by ports[%d].wire", clip.String(w.Local), j)
			return
		}
		sockets[w.Local] = i
	default: // an interface
		if j, dup := ifaces[w.Name]; dup {
			errs.add(path, w.String(), "interface %s is already used by ports[%d].wire", clip.String(w.Name), j)
			return
		}
		ifaces[w.Name] = i
	}
}

func (c *Config) checkForward(errs *fieldErrors) {
	f := &c.Forward
	if !oneOf(errs, "forward.mode", f.Mode, ForwardL2fwd, ForwardReflect, ForwardL3fwd, ForwardBridge) {
		return
	}
	if f.Mode == ForwardBridge {
		c.checkNotL3fwd(errs)
		c.checkBridge(errs)
		return
	}
	c.checkNotBridge(errs)
	if f.Mode == ForwardL3fwd {
		c.checkL3fwd(errs)
		return
	}
	c.checkNotL3fwd(errs)
	if f.Mode == ForwardReflect {
		if len(f.Pairs) > 0 {
			errs.add("forward.pairs", nil, "pairs only apply to l2fwd; reflect sends each frame back out of its own port")
			return
		}
		for i := range c.Ports {
			c.checkQueues(errs, i, i)
		}
		return
	}
	if len(f.Pairs) == 0 {
		if n := len(c.Ports); n%2 != 0 {
			errs.add("forward.pairs", nil, "l2fwd without pairs pairs the ports in order, but the number of ports is odd (%d): list the pairs", n)
			return
		}
		for i := 0; i+1 < len(c.Ports); i += 2 {
			c.checkQueues(errs, i, i+1)
			c.checkQueues(errs, i+1, i)
		}
		return
	}
	exists := map[string]bool{}
	for _, p := range c.Ports {
		exists[p.Name] = true
	}
	pairedIn := map[string]int{}
	before := len(*errs)
	for j, pair := range f.Pairs {
		path := fmt.Sprintf("forward.pairs[%d]", j)
		if len(pair) != 2 {
			errs.add(path, strings.Join(pair, ","), "a pair names exactly two ports, not %d", len(pair))
			continue
		}
		if pair[0] == pair[1] {
			errs.add(path, strings.Join(pair, ","), "a port cannot be paired with itself")
			continue
		}
		for k, name := range pair {
			ep := fmt.Sprintf("%s[%d]", path, k)
			if !exists[name] {
				errs.add(ep, name, "no port has this name")
			} else if m, dup := pairedIn[name]; dup {
				errs.add(ep, name, "port is already paired in forward.pairs[%d]", m)
			} else {
				pairedIn[name] = j
			}
		}
	}
	if len(*errs) > before {
		return // an unpaired port is likely the one a bad pair meant
	}
	for _, p := range c.Ports {
		if _, ok := pairedIn[p.Name]; !ok && p.Name != "" {
			errs.add("forward.pairs", p.Name, "port is in no pair; l2fwd forwards every port to its partner")
		}
	}
	index := map[string]int{}
	for i, p := range c.Ports {
		index[p.Name] = i
	}
	for _, pair := range f.Pairs {
		a, b := index[pair[0]], index[pair[1]]
		c.checkQueues(errs, a, b)
		c.checkQueues(errs, b, a)
	}
}

// checkQueues checks that port rx forwards to port tx with a TX queue for each of its RX
// queues: the dataplane sends what RX queue q receives out of TX queue q of the peer.
func (c *Config) checkQueues(errs *fieldErrors, rx, tx int) {
	r, t := &c.Ports[rx], &c.Ports[tx]
	if !r.sized() || !t.sized() {
		return // already reported
	}
	if r.RxQueues > t.TxQueues {
		errs.add(fmt.Sprintf("ports[%d].rx_queues", rx), r.RxQueues,
			"more than ports[%d].tx_queues (%d): frames of RX queue q leave by TX queue q of %s", tx, t.TxQueues, clip.String(t.Name))
	}
}

func (c *Config) checkPoll(errs *fieldErrors, h Host) {
	p := &c.Poll
	oneOf(errs, "poll.mode", p.Mode, PollBusy, PollAdaptive, PollSleep)
	before := len(*errs)
	c.checkPolicy(errs)
	seen := map[int]int{}
	for i, cpu := range p.CPUs {
		path := fmt.Sprintf("poll.cpus[%d]", i)
		if !h.hasCPU(cpu) {
			errs.add(path, cpu, "no such CPU here (have %s)", h.cpuList())
		} else if j, dup := seen[cpu]; dup {
			errs.add(path, cpu, "duplicate of poll.cpus[%d]", j)
		} else {
			seen[cpu] = i
		}
	}
	if oneOf(errs, "poll.delivery", p.Delivery, DeliveryInline, DeliveryThreaded) &&
		p.Delivery == DeliveryThreaded && p.Mode != PollAdaptive {
		errs.add("poll.delivery", p.Delivery, "threaded delivery needs poll.mode adaptive (only it waits for interrupts)")
	}
	if len(*errs) == before {
		// Whatever else the idle policy refuses, it refuses for the whole section.
		if pol, err := policyOf(*p); err == nil {
			policyRule(errs, "poll", nil, pol, "")
		}
	}
}

// oneOf checks that v is one of the allowed values and reports whether it is.
func oneOf(errs *fieldErrors, path, v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	want := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	if v == "" {
		errs.add(path, nil, "required (%s)", want)
	} else {
		errs.add(path, v, "want %s", want)
	}
	return false
}

func nonNegative(errs *fieldErrors, path string, d time.Duration) bool {
	if d < 0 {
		errs.add(path, d, "must not be negative")
		return false
	}
	return true
}

// checkListen checks an IP:port or localhost:port address (an empty IP is every
// address) and reports whether it is a loopback one. It never resolves a name.
func checkListen(s string) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return false, fmt.Errorf("want IP:port or localhost:port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port == "" || strconv.FormatUint(n, 10) != port {
		return false, fmt.Errorf("port %s is not a number in [0, 65535]", clip.Quote(port))
	}
	switch {
	case host == "":
		return false, nil
	case strings.EqualFold(host, "localhost"):
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, fmt.Errorf("host %s is not an IP address or localhost (names are not resolved)", clip.Quote(host))
	}
	return ip.Unmap().IsLoopback(), nil
}

// assignSimAddrs gives every sim port without a PCI address a synthetic one in domain
// ffff, in port order, skipping addresses other ports already use.
func (c *Config) assignSimAddrs() {
	used := map[pci.Addr]bool{}
	for _, p := range c.Ports {
		if a, err := pci.ParseAddr(p.PCI); err == nil {
			used[a] = true
		}
	}
	next := 0
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Driver != DriverSim || p.PCI != "" {
			continue
		}
		for ; next < maxSimDevices; next++ {
			a := pci.Addr{Domain: simPCIDomain, Bus: uint8(next / 32), Device: uint8(next % 32)}
			if !used[a] {
				used[a] = true
				p.PCI = a.String()
				break
			}
		}
	}
}

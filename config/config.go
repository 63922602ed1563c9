// Package config is the uiod daemon's configuration: the YAML schema, its defaults, UIOD_*
// environment overrides, and validation that reports every problem at once, each naming
// the field path and the bad value.
//
// A configuration is read with Load or Read. They read at most MaxDocumentSize bytes and
// parse the YAML themselves, within MaxDepth and MaxNodes (aliases counted per use), so
// that reading costs time linear in the input; a second document and keys that differ
// only in case are refused. Keys the schema does not have are reported by their full path
// (such as "ports[1].rx_rnig", with a suggestion); viper is given the rest with the
// environment overrides set over it and decodes it once, strictly typed, onto the
// defaults; the result is validated, every value whatever the mode, with the idle
// policy's own rules for the poll section. Errors about the content are a *ValidationError; a file that is not YAML or
// crosses a limit gives a *ParseError; any other error is a failure to read the input.
//
// Sim ports may leave pci out: Load then gives them a synthetic address in domain ffff
// (ffff:00:00.0, ffff:00:01.0, ... in port order, skipping addresses already in use), so
// that every port of a loaded configuration has a valid, unique address.
package config

import (
	"net"
	"strings"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/pci/pcihost"
)

// Config is the daemon's whole configuration. The mapstructure tags are the YAML keys.
type Config struct {
	Log     Log     `mapstructure:"log"`
	Metrics Metrics `mapstructure:"metrics"`
	// StateDir holds the daemon's lock and pid file, <root>/<state_dir>/uiod.pid:
	// DefaultStateDir, or $XDG_RUNTIME_DIR/uiod when a user other than
	// root loads a configuration without PCI ports that does not set it.
	StateDir string `mapstructure:"state_dir"`
	// Capture is the control socket's access: who besides root and the daemon's user
	// may run uiod capture (capture.go).
	Capture Capture `mapstructure:"capture"`
	Ports   []Port  `mapstructure:"ports"`
	Forward Forward `mapstructure:"forward"`
	Bridge  Bridge  `mapstructure:"bridge"` // forward.mode bridge (bridge.go)
	Poll    Poll    `mapstructure:"poll"`
	Power   Power   `mapstructure:"power"`
	VFIO    VFIO    `mapstructure:"vfio"`
	Memory  Memory  `mapstructure:"memory"`
}

// Log configures the daemon's logger.
type Log struct {
	Level  string `mapstructure:"level"`  // debug, info, warn or error
	Format string `mapstructure:"format"` // console or json
}

// Metrics configures the Prometheus and /status HTTP endpoint.
type Metrics struct {
	// Listen is the IP:port (or localhost:port) to serve on; "" turns the endpoint off.
	// Host names are refused: validation never resolves names, and a daemon that binds
	// by name may bind wherever the resolver says.
	Listen string `mapstructure:"listen"`
	// Public allows a Listen address other than loopback (":9477", "0.0.0.0:9477", a
	// LAN address): the endpoint has no authentication.
	Public bool `mapstructure:"public"`
}

// Port is one NIC port the daemon opens.
type Port struct {
	// Name identifies the port in forward pairs, metrics and logs.
	Name string `mapstructure:"name"`
	// PCI is the function's address (DDDD:BB:DD.F or BB:DD.F), or env:PCIDEVICE_<RESOURCE>, the
	// next address of the SR-IOV device plugin's variable (see PCIEnvPrefix). Optional for
	// sim ports.
	PCI string `mapstructure:"pci"`
	// Driver is the backend that opens the function: vfio-pci, uio_pci_generic or sim.
	Driver string `mapstructure:"driver"`
	// NIC is the NIC driver: auto (by device id), ixgbe, igb or virtio. On a sim port it
	// also selects the device model: the 82599 for auto and ixgbe, the 82576 for igb, a
	// virtio-net device for virtio.
	NIC string `mapstructure:"nic"`
	// Wire is what a sim port's cable is plugged into (sim ports only, required there).
	Wire Wire `mapstructure:"wire"`
	// RxQueues and TxQueues are the queue counts, 1 to 16.
	RxQueues int `mapstructure:"rx_queues"`
	TxQueues int `mapstructure:"tx_queues"`
	// RxRing and TxRing are descriptors per queue: a power of two from 64 to 4096.
	RxRing int `mapstructure:"rx_ring"`
	TxRing int `mapstructure:"tx_ring"`
	// MTU is the port's IP MTU, as Linux's: a port with mtu 9000 carries Ethernet frames
	// of 9014 bytes without FCS, 9018 with a VLAN tag (default, and 0: 1500; 68 up to what the
	// NIC takes: 9710 on the 82599, 9190 on the 82576, 9706 on its VF, 9710 and at most the
	// device's on virtio; 9710 on vhost-user; on af_xdp ports the interface's:
	// left out it is taken from the interface, given it must match it, up to 9710, with
	// multi-buffer AF_XDP above 1774 at xdp.frame_size 2048 and 3822 at 4096). Buffers are
	// sized to hold one frame.
	MTU int `mapstructure:"mtu"`
	// ITR is the minimum interval between interrupts; 0 means no moderation.
	ITR time.Duration `mapstructure:"itr"`
	// Promiscuous makes the port accept every frame.
	Promiscuous bool `mapstructure:"promiscuous"`
	// Interrupts is msix or intx. Empty means the driver's default: intx for
	// uio_pci_generic (it has nothing else), msix otherwise.
	Interrupts string `mapstructure:"interrupts"`
	// Kernel is the port's kernel exception path (none by default).
	Kernel Kernel `mapstructure:"kernel"`
	// Socket is a vhost-user port's unix socket and Mode (server or client, default
	// server) which side of it uiod is (vhost-user ports only; see vhost.go).
	Socket string `mapstructure:"socket"`
	Mode   string `mapstructure:"mode"`
	// Interface is an af_xdp port's netdev and XDP its socket and program keys (af_xdp
	// ports only; see afxdp.go).
	Interface string `mapstructure:"interface"`
	XDP       XDP    `mapstructure:"xdp"`
}

// Forward configures the dataplane application.
type Forward struct {
	// Mode is l2fwd (each frame leaves by the other port of its pair), reflect (MACs
	// swapped, sent back out of the port it came in on) or l3fwd (routed by Routes).
	Mode string `mapstructure:"mode"`
	// Pairs are the l2fwd port pairs by name, forwarding in both directions. Without
	// pairs, l2fwd pairs the ports in order: the first with the second, and so on.
	Pairs [][]string `mapstructure:"pairs"`
	// Routes are l3fwd's routing table (see Route).
	Routes []Route `mapstructure:"routes"`
	// Local are the router's own addresses (l3fwd only): what is sent to them goes to
	// the RX port's kernel path, never forwarded (see ParseLocal).
	Local []string `mapstructure:"local"`
	// Police limits what l3fwd hands to the kernel path, by class (see PoliceClasses).
	Police map[string]PoliceRate `mapstructure:"police"`
	// RoutesFrom is where l3fwd's routes come from: static (Routes only, the default) or
	// kernel (the kernel's routes and neighbours on the ports' TAPs, with Routes pinned
	// over them: see RoutesFromKernel).
	RoutesFrom string `mapstructure:"routes_from"`
	// KernelTable is the kernel routing table RoutesFrom kernel follows: main (the
	// default), a number, or a name from /etc/iproute2/rt_tables (see ParseKernelTable).
	KernelTable string `mapstructure:"kernel_table"`
	// MaxRoutes and MaxRoutes6 bound l3fwd's IPv4 and IPv6 tables: routes and local
	// addresses, static and from the kernel, each family (0: DefaultMaxRoutes,
	// DefaultMaxRoutes6). Static ones over it are a configuration error; kernel routes
	// over it are left out and counted (FIBStatus.OverLimit).
	MaxRoutes  int `mapstructure:"max_routes"`
	MaxRoutes6 int `mapstructure:"max_routes6"`
}

// Poll configures the poll loops and their idle policy.
type Poll struct {
	// Mode is the idle policy: busy, adaptive or sleep.
	Mode string `mapstructure:"mode"`
	// IdleThreshold is how long adaptive polls without traffic before it arms interrupts
	// and sleeps (0: at the first empty poll), or "auto" to decide from the traffic seen.
	IdleThreshold Threshold `mapstructure:"idle_threshold"`
	// WaitTimeout bounds one sleep in adaptive mode: 1ms to 1s.
	WaitTimeout time.Duration `mapstructure:"wait_timeout"`
	// SleepMin and SleepMax bound the random sleep after each empty poll in sleep mode.
	SleepMin time.Duration `mapstructure:"sleep_min"`
	SleepMax time.Duration `mapstructure:"sleep_max"`
	// Housekeeping gives the CPU away periodically under any policy.
	Housekeeping Housekeeping `mapstructure:"housekeeping"`
	// CPUs are the CPUs to run one pinned poll thread on each. Empty means one poll
	// thread, not pinned.
	CPUs []int `mapstructure:"cpus"`
	// Delivery is inline (sleep in epoll on the polling thread itself) or threaded (a
	// separate waiter thread hands wake-ups over a channel; for comparison only).
	Delivery string `mapstructure:"delivery"`
}

// Housekeeping gives the CPU away for Length at most Hz times a second, preferably at an
// empty poll. Hz = 0 turns it off.
type Housekeeping struct {
	Hz     int           `mapstructure:"hz"`
	Length time.Duration `mapstructure:"length"`
}

// Power configures power-management knobs the daemon holds while it runs.
type Power struct {
	// CPUDMALatency is written to /dev/cpu_dma_latency (µs) and held open; -1 is off.
	CPUDMALatency int `mapstructure:"cpu_dma_latency"`
}

// VFIO configures how vfio-pci ports are opened.
type VFIO struct {
	// Interface is the kernel interface: auto (the container/group interface when
	// /dev/vfio/vfio exists, else the device cdev with iommufd), group, or iommufd.
	Interface string `mapstructure:"interface"`
}

// Memory bounds the memory the ports may pin for DMA and the memory of the sim ports'
// device models.
type Memory struct {
	// DMALimit is the most DMA memory (descriptor rings and packet buffers) the vfio-pci
	// and uio_pci_generic ports may need together, or auto: what the host allows (see
	// Host.DMALimit). Sim ports' memory is ordinary memory and not counted.
	DMALimit Size `mapstructure:"dma_limit"`
	// ModelLimit is the most memory the sim ports' device models may need together
	// (their DMA memory is ordinary memory, see Port.ModelNeed), or auto: MemAvailable
	// of <root>/proc/meminfo (see Host.ModelLimit).
	ModelLimit Size `mapstructure:"model_limit"`
}

// Values of the enumerated keys.
const (
	DriverVFIO = pcihost.DriverVFIO
	DriverUIO  = pcihost.DriverUIO
	DriverSim  = "sim"

	NICAuto   = "auto"
	NICIxgbe  = "ixgbe"
	NICIgb    = "igb"
	NICIgbvf  = "igbvf"
	NICVirtio = "virtio"

	InterruptsMSIX = "msix"
	InterruptsINTx = "intx"

	ForwardL2fwd   = "l2fwd"
	ForwardReflect = "reflect"

	PollBusy     = "busy"
	PollAdaptive = "adaptive"
	PollSleep    = "sleep"

	VFIOAuto    = "auto"
	VFIOGroup   = "group"
	VFIOIOMMUFD = "iommufd"

	DeliveryInline   = "inline"
	DeliveryThreaded = "threaded"
)

// Defaults.
const (
	DefaultMetricsListen = "127.0.0.1:9477"
	DefaultStateDir      = "/run/uiod"
	DefaultQueues        = 1
	DefaultRing          = nic.DefaultRing
	DefaultIdleThreshold = idle.DefaultIdleThreshold
	DefaultWaitTimeout   = idle.DefaultWaitTimeout
	DefaultSleepMin      = 100 * time.Microsecond
	DefaultSleepMax      = 200 * time.Microsecond
)

// Default returns a configuration with every default filled in and no ports (so it does
// not validate until ports are added).
func Default() *Config {
	return &Config{
		Log:      Log{Level: "info", Format: "console"},
		Metrics:  Metrics{Listen: DefaultMetricsListen},
		StateDir: DefaultStateDir,
		Forward:  Forward{Mode: ForwardL2fwd},
		Poll: Poll{
			Mode:          PollAdaptive,
			IdleThreshold: Threshold{Duration: DefaultIdleThreshold},
			WaitTimeout:   DefaultWaitTimeout,
			SleepMin:      DefaultSleepMin,
			SleepMax:      DefaultSleepMax,
			Delivery:      DeliveryInline,
		},
		Power:  Power{CPUDMALatency: -1},
		VFIO:   VFIO{Interface: VFIOAuto},
		Memory: Memory{DMALimit: Size{Auto: true}, ModelLimit: Size{Auto: true}},
	}
}

// DefaultPort returns a port with every default filled in; Name, Driver, PCI and Wire are
// left for the caller.
func DefaultPort() Port {
	return Port{
		NIC:      NICAuto,
		RxQueues: DefaultQueues,
		TxQueues: DefaultQueues,
		RxRing:   DefaultRing,
		TxRing:   DefaultRing,
		MTU:      nic.DefaultMTU,
	}
}

// IdleThreshold returns the adaptive policy's idle threshold, or auto = true when the
// loop is to choose it from the traffic it sees.
func (c *Config) IdleThreshold() (d time.Duration, auto bool) {
	return c.Poll.IdleThreshold.Duration, c.Poll.IdleThreshold.Auto
}

// MetricsEnabled reports whether the metrics endpoint is on.
func (c *Config) MetricsEnabled() bool { return c.Metrics.Listen != "" }

// ListenAddr returns metrics.listen with localhost replaced by 127.0.0.1, an address to
// bind that needs no name lookup.
func (m Metrics) ListenAddr() string {
	host, port, err := net.SplitHostPort(m.Listen)
	if err != nil || !strings.EqualFold(host, "localhost") {
		return m.Listen
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// CPUDMALatency returns the latency to hold in /dev/cpu_dma_latency, in microseconds, and
// whether to hold it at all.
func (c *Config) CPUDMALatency() (us int, ok bool) {
	return c.Power.CPUDMALatency, c.Power.CPUDMALatency >= 0
}

// Port returns the port with the given name, or nil.
func (c *Config) Port(name string) *Port {
	for i := range c.Ports {
		if c.Ports[i].Name == name {
			return &c.Ports[i]
		}
	}
	return nil
}

// ForwardPairs returns the l2fwd port pairs by name: forward.pairs if given, else the
// ports paired in order. It returns nil in reflect mode.
func (c *Config) ForwardPairs() [][2]string {
	if c.Forward.Mode != ForwardL2fwd {
		return nil
	}
	var pairs [][2]string
	if len(c.Forward.Pairs) > 0 {
		for _, p := range c.Forward.Pairs {
			if len(p) == 2 {
				pairs = append(pairs, [2]string{p[0], p[1]})
			}
		}
		return pairs
	}
	for i := 0; i+1 < len(c.Ports); i += 2 {
		pairs = append(pairs, [2]string{c.Ports[i].Name, c.Ports[i+1].Name})
	}
	return pairs
}

// Addr returns the port's PCI address. Every port of a configuration returned by Load or
// Read has a valid one; otherwise an unparsable or missing address gives the zero Addr.
func (p *Port) Addr() pci.Addr {
	a, err := pci.ParseAddr(p.PCI)
	if err != nil {
		return pci.Addr{}
	}
	return a
}

// InterruptMode returns the interrupt mode, msix or intx, applying the driver's default
// when Interrupts is empty.
func (p *Port) InterruptMode() string {
	if p.Interrupts != "" {
		return p.Interrupts
	}
	return defaultInterrupts(p.Driver)
}

// defaultInterrupts is the interrupt mode a driver uses when none is configured.
func defaultInterrupts(driver string) string {
	if driver == DriverUIO {
		return InterruptsINTx
	}
	return InterruptsMSIX
}

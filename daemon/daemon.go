// Package daemon turns a validated configuration into a running dataplane: it opens every
// port through its backend, starts the poll threads, serves Prometheus metrics and a JSON
// status page, and shuts everything down in the order that keeps DMA from outliving its
// memory: loops stopped (sleepers woken), queues stopped, interrupts masked, bus mastering
// off, and only then DMA memory freed and devices closed.
package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/capture"
	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd"
	"github.com/uiod/uiod/pci/pcihost"
)

// Options are what the daemon takes from its environment rather than its configuration.
type Options struct {
	// Root prefixes every host path ("/" when empty).
	Root string
	// Log is the daemon's logger (nil: none).
	Log *zap.Logger
	// App, when set, runs instead of forward.mode's built-in app, on the same queues:
	// each RX queue's Burst.Peer is its forward pair's port (with forward.mode reflect,
	// its own), and the ports' PortIDs are their places in the configuration's ports.
	App dataplane.App
	// Collectors are registered with the daemon's /metrics (an App's own metrics).
	Collectors []prometheus.Collector
	// LogLevel is Log's level, which Reload sets from log.level; nil when the level does
	// not come from the configuration (a --log-level flag), and Reload leaves it.
	LogLevel *zap.AtomicLevel
	// Version and Revision identify the build, for /status and uiod_build_info.
	Version, Revision string
}

// Daemon is a running (or ready to run) uiod dataplane.
type Daemon struct {
	cfg  *config.Config
	opts Options
	log  *zap.Logger

	mu       sync.Mutex
	started  time.Time
	backends backends
	ports    []*port
	dp       *dataplane.Dataplane
	bridge   *bridgeRun      // forward.mode bridge (bridge.go)
	control  *capture.Server // the control socket, for uiod capture
	http     *http.Server
	listener net.Listener
	dmaLat   *os.File
	lock     *pidLock
	wireDirs []*os.File // unix wire socket directories pinned under the root (pinWire)
	running  bool

	router atomic.Pointer[l3fwd.App] // forward.mode l3fwd's app, for its metrics

	fibWatch atomic.Pointer[fibWatcher] // forward.routes_from kernel's watcher (fib_linux.go)

	tapFollow atomic.Pointer[tapFollower] // the kernel paths' watcher (tapfollow_linux.go)

	httpLimits httpLimits
}

// New prepares a daemon for cfg, which must have been validated (config.Load does).
func New(cfg *config.Config, opts Options) *Daemon {
	if opts.Root == "" {
		opts.Root = "/"
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	return &Daemon{cfg: cfg, opts: opts, log: opts.Log, backends: backends{root: opts.Root, vfioMode: vfioMode(cfg.VFIO.Interface), log: opts.Log},
		httpLimits: defaultHTTPLimits}
}

// Start opens the ports, starts the poll threads and the metrics endpoint. If any step
// fails, Start undoes what it did and returns an error naming the step; the daemon can
// then be discarded.
func (d *Daemon) Start() (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running {
		return errors.New("daemon already started")
	}
	defer func() {
		if err != nil {
			d.shutdownLocked()
		}
	}()
	// state_dir and unix wire sockets stay inside the root, whoever built the config.
	if err := d.cfg.CheckHostPaths(d.opts.Root); err != nil {
		return err
	}
	lock, err := lockStateDir(d.opts.Root, d.cfg.StateDir)
	if err != nil {
		return err
	}
	d.lock = lock
	if err := quiesceStale(lock, d.opts.Root, d.cfg.Ports, d.log); err != nil {
		return err
	}
	if us, ok := d.cfg.CPUDMALatency(); ok {
		f, err := holdCPUDMALatency(d.opts.Root, us)
		if err != nil {
			return err
		}
		d.dmaLat = f
	}
	if err := d.checkKernels(); err != nil {
		return err
	}
	for _, pc := range d.cfg.Ports {
		w, dirs, err := pinWire(d.opts.Root, pc.Wire)
		if err != nil {
			return fmt.Errorf("port %s: wire %s: %w", pc.Name, pc.Wire, err)
		}
		d.wireDirs = append(d.wireDirs, dirs...)
		pc.Wire = w
		p, err := d.backends.openPort(pc)
		if err != nil {
			return err
		}
		d.ports = append(d.ports, p)
		d.watchRemoval(p)
		if err := d.openKernel(p); err != nil {
			return err
		}
		link := p.nic.Link()
		d.log.Info("port up", zap.String("port", pc.Name), zap.String("pci", p.addr.String()),
			zap.String("driver", pc.Driver), zap.String("mac", p.nic.MAC().String()),
			zap.Bool("link", link.Up), zap.Int("speed_mbps", link.SpeedMbps))
	}
	dcfg, err := d.dataplaneConfig()
	if err != nil {
		return err
	}
	threads := len(dcfg.Threads)
	dp, err := dataplane.New(dcfg)
	if err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	if err := dp.Start(); err != nil {
		return fmt.Errorf("start dataplane: %w", err)
	}
	d.dp = dp
	if err := d.startTAPFollow(); err != nil { // tapfollow_linux.go
		return err
	}
	// The control socket (uiod capture) lives beside the pid file, whose lock we hold;
	// capture.group's members may use it too.
	var capGroup *capture.Group
	if g, ok, err := d.cfg.Capture.ResolveGroup(); err != nil {
		return fmt.Errorf("capture.group %q: %w", d.cfg.Capture.Group, err)
	} else if ok {
		capGroup = &g
	}
	ctl, err := capture.Listen(filepath.Join(d.lock.dir.Path(), capture.SocketName), dp, d.log.Named("capture"), capGroup)
	if err != nil {
		return err
	}
	d.control = ctl
	if d.cfg.MetricsEnabled() {
		if err := d.serveHTTP(); err != nil {
			return err
		}
	}
	d.started = time.Now()
	d.running = true
	d.log.Info("dataplane running", zap.Int("threads", threads), zap.String("mode", d.cfg.Poll.Mode),
		zap.String("idle_threshold", d.cfg.Poll.IdleThreshold.String()), zap.String("app", d.cfg.Forward.Mode))
	return nil
}

// dataplaneConfig builds the dataplane's configuration from the open ports: the queues
// the forward mode asks for (forwardQueues), spread over the poll threads (assignThreads),
// the App, the idle policy and the kernel paths.
func (d *Daemon) dataplaneConfig() (dataplane.Config, error) {
	app, err := d.forwardApp()
	if err != nil {
		return dataplane.Config{}, err
	}
	queues, err := d.forwardQueues(app)
	if err != nil {
		return dataplane.Config{}, err
	}
	pol, err := d.cfg.Poll.IdlePolicy()
	if err != nil {
		return dataplane.Config{}, err
	}
	threads := assignThreads(queues, d.cfg.Poll.CPUs, pol.SleepsOnInterrupt())
	if d.cfg.Forward.Mode == config.ForwardL3fwd || d.isBridge() {
		if err := l3fwdTx(threads, d.ports); err != nil {
			return dataplane.Config{}, err
		}
	}
	d.startBridge(app, threads) // bridge.go
	if d.opts.App != nil {
		app = d.opts.App
	}
	ports := make([]dataplane.Port, len(d.ports))
	for i, p := range d.ports {
		ports[i] = dataplane.Port{Name: p.cfg.Name, NIC: p.nic}
	}
	if err := addKernelPaths(ports, threads, d.ports); err != nil {
		return dataplane.Config{}, err
	}
	return dataplane.Config{Ports: ports, Threads: threads, App: app, Policy: pol, Logger: d.log.Named("dataplane")}, nil
}

// Stop shuts the daemon down in order: metrics endpoint, poll loops (sleepers woken),
// then every port (queues stopped, interrupts masked, bus mastering off, DMA freed), the
// shared DMA address spaces, and the cpu_dma_latency hold. Safe to call more than once.
func (d *Daemon) Stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.shutdownLocked()
}

func (d *Daemon) shutdownLocked() error {
	var errs []error
	d.closeHTTP()
	if d.control != nil {
		if err := d.control.Close(); err != nil {
			errs = append(errs, fmt.Errorf("control socket: %w", err))
		}
		d.control = nil
	}
	if d.dp != nil {
		d.dp.Stop()
		d.dp = nil
	}
	d.closeFIB()       // fib_linux.go
	d.closeTAPFollow() // tapfollow_linux.go
	for i := len(d.ports) - 1; i >= 0; i-- {
		p := d.ports[i]
		if err := p.close(); err != nil {
			errs = append(errs, fmt.Errorf("close port %s: %w", p.cfg.Name, err))
		} else {
			d.log.Info("port closed", zap.String("port", p.cfg.Name))
		}
	}
	d.ports = nil
	d.closeBridge()
	closeAll(d.wireDirs) // after the wires: closing one removes its socket through its directory
	d.wireDirs = nil
	if err := d.backends.close(); err != nil {
		errs = append(errs, err)
	}
	if d.dmaLat != nil {
		_ = d.dmaLat.Close()
		d.dmaLat = nil
	}
	if d.lock != nil {
		if err := d.lock.release(); err != nil {
			errs = append(errs, err)
		}
		d.lock = nil
	}
	d.running = false
	return errors.Join(errs...)
}

// cpuDMALatencyPath is the PM QoS device under the root.
const cpuDMALatencyPath = "dev/cpu_dma_latency"

// MetricsAddr is the address the metrics endpoint listens on, or "" when it is off.
func (d *Daemon) MetricsAddr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.listener == nil {
		return ""
	}
	return d.listener.Addr().String()
}

// holdCPUDMALatency writes us to <root>/dev/cpu_dma_latency and keeps the file open: the
// kernel honours the request while the file is open. The path is resolved inside root
// only, opened without blocking, and must be a character device (the kernel's misc
// device): a FIFO, regular file or symlink out of the root put in its place is refused.
func holdCPUDMALatency(root string, us int) (*os.File, error) {
	h, err := pcihost.New(root)
	if err != nil {
		return nil, fmt.Errorf("power.cpu_dma_latency: %w", err)
	}
	f, err := h.OpenFile(cpuDMALatencyPath, os.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("power.cpu_dma_latency: %w", err)
	}
	path := f.Name()
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		f.Close()
		if err == nil {
			err = fmt.Errorf("not a character device (%s)", fi.Mode().Type())
		}
		return nil, fmt.Errorf("power.cpu_dma_latency: %s: %w", path, err)
	}
	var b [4]byte
	v := uint32(int32(us))
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	if _, err := f.Write(b[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("power.cpu_dma_latency: write %s: %w", path, err)
	}
	return f, nil
}

package daemon

import (
	"fmt"
	"reflect"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/uiod/uiod/config"
)

// livePaths are the configuration keys Reload applies to a running daemon; a change to
// any other key (ports, queues, rings, forward, poll.cpus, state_dir, ...) needs a
// restart.
var livePaths = []string{"log.level", "metrics.listen", "metrics.public", "poll"}

// restartPaths are the keys of poll that the running threads cannot change.
var restartPaths = []string{"poll.cpus"}

// Reload applies cfg, a newly loaded and validated configuration, to the running daemon:
// the log level (when the daemon's logger came from the configuration: Options.LogLevel),
// the metrics endpoint (rebound to the new address; on failure the old one stays) and the
// idle policy with its parameters (dataplane.SetPolicy). Every other difference needs a
// restart: each is logged by its key path (such as ports[1].rx_ring) and the daemon keeps
// running it as it was. It returns the keys it changed and those that need a restart; a
// live change that failed is logged, returned in err, and the old value stays.
func (d *Daemon) Reload(cfg *config.Config) (applied, restart []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		return nil, nil, fmt.Errorf("reload: the daemon is not running")
	}
	next := *d.cfg // what runs after the reload: the old configuration and the live changes
	var errs []string
	for _, path := range diffPaths(reflect.ValueOf(*d.cfg), reflect.ValueOf(*cfg), "") {
		if !isLive(path) {
			restart = append(restart, path)
			d.log.Warn("configuration change needs a restart: keeping the running value", zap.String("key", path))
			continue
		}
		applied = append(applied, path)
	}
	if changed(applied, "log.level") {
		if lvl, perr := zapcore.ParseLevel(cfg.Log.Level); perr != nil {
			errs = append(errs, "log.level: "+perr.Error())
		} else if d.opts.LogLevel == nil {
			d.log.Warn("log.level: the log level was given on the command line; not changed")
		} else {
			d.opts.LogLevel.SetLevel(lvl)
			next.Log.Level = cfg.Log.Level
		}
	}
	if changed(applied, "metrics.listen") || changed(applied, "metrics.public") {
		if merr := d.rebindMetrics(cfg.Metrics); merr != nil {
			errs = append(errs, merr.Error())
		} else {
			next.Metrics = cfg.Metrics
		}
	}
	if changed(applied, "poll") {
		if perr := d.setPolicy(cfg.Poll); perr != nil {
			errs = append(errs, "poll: "+perr.Error())
		} else {
			cpus := next.Poll.CPUs
			next.Poll = cfg.Poll
			next.Poll.CPUs = cpus
		}
	}
	d.cfg = &next
	if len(errs) > 0 {
		err = fmt.Errorf("reload: %s", strings.Join(errs, "; "))
	}
	return applied, restart, err
}

// setPolicy puts the poll section's idle policy in force on the running threads.
func (d *Daemon) setPolicy(p config.Poll) error {
	pol, err := p.IdlePolicy()
	if err != nil {
		return err
	}
	if d.dp == nil {
		return fmt.Errorf("no dataplane running")
	}
	return d.dp.SetPolicy(pol)
}

// rebindMetrics moves the metrics endpoint to m: it listens on the new address first
// and only then closes the old endpoint, so that a failure leaves the old one serving.
// When the new address cannot be bound while the old one is open (the same port on
// another address), the old one is closed first, and reopened if the new one still fails.
func (d *Daemon) rebindMetrics(m config.Metrics) error {
	old, oldSrv := d.listener, d.http
	if m.Listen == "" {
		d.closeHTTP()
		d.log.Info("metrics endpoint off")
		return nil
	}
	ln, err := listenMetrics(m.ListenAddr())
	if err != nil && old != nil {
		d.closeHTTP()
		ln, err = listenMetrics(m.ListenAddr())
		if err != nil {
			if back, rerr := listenMetrics(old.Addr().String()); rerr == nil {
				d.serveOn(back)
			} else {
				d.log.Error("metrics endpoint: cannot listen on the old address again", zap.Error(rerr))
			}
			return fmt.Errorf("metrics.listen: %w", err)
		}
	}
	if err != nil {
		return fmt.Errorf("metrics.listen: %w", err)
	}
	if d.http == oldSrv {
		d.closeHTTP()
	}
	d.serveOn(ln)
	return nil
}

// changed reports whether one of paths is key or inside it.
func changed(paths []string, key string) bool {
	for _, p := range paths {
		if within(p, key) {
			return true
		}
	}
	return false
}

// isLive reports whether Reload can apply a change to path.
func isLive(path string) bool {
	return !within(path, restartPaths...) && within(path, livePaths...)
}

// within reports whether path is one of keys or a key inside one.
func within(path string, keys ...string) bool {
	for _, k := range keys {
		if path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[") {
			return true
		}
	}
	return false
}

// diffPaths lists the key paths (mapstructure tags: "poll.wait_timeout",
// "ports[1].rx_ring") whose values differ between a and b, two values of one
// configuration type. A list of another length differs as a whole.
func diffPaths(a, b reflect.Value, prefix string) []string {
	if a.Kind() == reflect.Struct && hasKeys(a.Type()) {
		var out []string
		for i := 0; i < a.NumField(); i++ {
			tag := a.Type().Field(i).Tag.Get("mapstructure")
			if tag == "" {
				continue
			}
			p := tag
			if prefix != "" {
				p = prefix + "." + tag
			}
			out = append(out, diffPaths(a.Field(i), b.Field(i), p)...)
		}
		return out
	}
	if a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Struct && a.Len() == b.Len() {
		var out []string
		for i := 0; i < a.Len(); i++ {
			out = append(out, diffPaths(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", prefix, i))...)
		}
		return out
	}
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return nil
	}
	return []string{prefix}
}

// hasKeys reports whether t is a configuration section: a struct with mapstructure keys
// (Threshold, Size and Wire are values).
func hasKeys(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("mapstructure") != "" {
			return true
		}
	}
	return false
}

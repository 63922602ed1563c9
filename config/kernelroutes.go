package config

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The values of forward.routes_from.
const (
	// RoutesFromStatic: l3fwd routes by forward.routes alone (the default).
	RoutesFromStatic = "static"
	// RoutesFromKernel: l3fwd follows the kernel's routing table forward.kernel_table
	// and its neighbour table, for the routes whose output device is one of the ports'
	// TAPs (kernel.tap), as they change; forward.routes are pinned over them (a static
	// route wins over a kernel route for the same prefix) and forward.local is kept.
	RoutesFromKernel = "kernel"
)

// RTTablesFiles are where ParseKernelTable looks a table's name up, in order: the
// administrator's file, then iproute2's packaged one.
var RTTablesFiles = []string{"/etc/iproute2/rt_tables", "/usr/share/iproute2/rt_tables"}

// Kernel routing table numbers iproute2 names without a file.
var builtinTables = map[string]int{"main": 254, "local": 255, "default": 253}

// ParseKernelTable parses forward.kernel_table: empty (main, 254), a number from 1 to
// 4294967295 other than 255 (local, whose local and broadcast routes l3fwd always takes),
// or a name: main, default, or one in RTTablesFiles.
func ParseKernelTable(s string) (int, error) {
	if s == "" {
		return builtinTables["main"], nil
	}
	id, err := tableID(s)
	if err != nil {
		return 0, err
	}
	if id == builtinTables["local"] {
		return 0, errors.New("the local table holds the router's own addresses, which l3fwd takes from it anyway: name the table of the routes to forward by (main by default)")
	}
	return id, nil
}

func tableID(s string) (int, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if n == 0 {
			return 0, errors.New("table 0 is unspecified: want 1 to 4294967295, or a name")
		}
		return int(n), nil
	}
	if id, ok := builtinTables[s]; ok {
		return id, nil
	}
	for _, path := range RTTablesFiles {
		id, ok, err := lookupRTTables(path, s)
		if err != nil {
			return 0, err
		}
		if ok {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no table of this name in %s (want main, a number, or a name listed there)", strings.Join(RTTablesFiles, " or "))
}

// lookupRTTables finds name in an rt_tables file ("NUMBER NAME" lines, # comments); a
// missing file has no names.
func lookupRTTables(path, name string) (int, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[1] != name {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 0, 32)
		if err != nil || n == 0 {
			continue
		}
		return int(n), true, nil
	}
	return 0, false, sc.Err()
}

// checkRoutesFrom checks forward.routes_from and forward.kernel_table in l3fwd mode: a
// kernel source needs a port with a kernel path, whose routes it follows.
func (c *Config) checkRoutesFrom(errs *fieldErrors) {
	f := &c.Forward
	switch f.RoutesFrom {
	case "", RoutesFromStatic:
		if f.KernelTable != "" && f.KernelTable != "main" { // the default, which the example shows
			errs.add("forward.kernel_table", f.KernelTable, "only applies to routes_from: kernel")
		}
		return
	case RoutesFromKernel:
	default:
		errs.add("forward.routes_from", f.RoutesFrom, "want %s or %s", RoutesFromStatic, RoutesFromKernel)
		return
	}
	if _, err := ParseKernelTable(f.KernelTable); err != nil {
		errs.add("forward.kernel_table", f.KernelTable, "%v", err)
	}
	for _, p := range c.Ports {
		if p.Kernel.TAP != "" {
			return
		}
	}
	errs.add("forward.routes_from", f.RoutesFrom, "no port has a kernel path (kernel: {tap: NAME}): the kernel's routes are those whose output device is a port's TAP")
}

// checkNotRoutesFrom refuses forward.routes_from and forward.kernel_table in the other
// modes.
func (c *Config) checkNotRoutesFrom(errs *fieldErrors) {
	if c.Forward.RoutesFrom != "" {
		errs.add("forward.routes_from", c.Forward.RoutesFrom, "only applies to forward.mode l3fwd")
	}
	if c.Forward.KernelTable != "" {
		errs.add("forward.kernel_table", c.Forward.KernelTable, "only applies to forward.mode l3fwd")
	}
}

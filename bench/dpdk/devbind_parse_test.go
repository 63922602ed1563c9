package dpdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// listing is one timed command of the devbind guest script: its stdout between
// "DEVBIND BEGIN state tool" and "DEVBIND END state tool rc=N real=s user=s sys=s", its
// stderr in "DEVBIND stderr: " lines there.
type listing struct {
	state, tool     string
	out, stderr     string
	rc              int
	real, user, sys float64 // seconds
}

// parseListings returns the listings of the guest output in order. A BEGIN without its END
// (the guest died) is an error.
func parseListings(out string) ([]listing, error) {
	var ls []listing
	var cur *listing
	var body, stderr []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "DEVBIND BEGIN "); ok {
			if cur != nil {
				return nil, fmt.Errorf("listing %s %s has no end", cur.state, cur.tool)
			}
			f := strings.Fields(rest)
			if len(f) != 2 {
				return nil, fmt.Errorf("bad listing start %q", l)
			}
			cur, body, stderr = &listing{state: f[0], tool: f[1]}, nil, nil
			continue
		}
		if cur == nil {
			continue
		}
		if e, ok := strings.CutPrefix(l, "DEVBIND stderr: "); ok {
			stderr = append(stderr, e)
			continue
		}
		rest, ok := strings.CutPrefix(l, "DEVBIND END ")
		if !ok {
			body = append(body, l)
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 || f[0] != cur.state || f[1] != cur.tool {
			return nil, fmt.Errorf("listing %s %s ends with %q", cur.state, cur.tool, l)
		}
		cur.rc = -1
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "rc":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("listing end %q: rc: %w", l, err)
				}
				cur.rc = n
			case "real", "user", "sys":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("listing end %q: %s: %w", l, k, err)
				}
				switch k {
				case "real":
					cur.real = x
				case "user":
					cur.user = x
				default:
					cur.sys = x
				}
			}
		}
		if cur.rc < 0 {
			return nil, fmt.Errorf("listing end %q has no rc", l)
		}
		cur.out, cur.stderr = strings.Join(body, "\n"), strings.Join(stderr, "\n")
		ls = append(ls, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, fmt.Errorf("listing %s %s has no end", cur.state, cur.tool)
	}
	return ls, nil
}

// binding is one PCI function as a listing reports it.
type binding struct {
	id         string // vendor:device, four lowercase hex digits each
	driver     string // "" if none
	interfaces string // comma-separated, sorted
}

// parseUIODJSON returns the functions of `uiod devices --json` by PCI address.
func parseUIODJSON(out string) (map[string]binding, error) {
	var devs []struct {
		Addr       string   `json:"address"`
		Vendor     string   `json:"vendor_id"`
		Device     string   `json:"device_id"`
		Driver     string   `json:"driver"`
		Interfaces []string `json:"interfaces"`
	}
	if err := json.Unmarshal([]byte(out), &devs); err != nil {
		return nil, fmt.Errorf("uiod devices --json: %w", err)
	}
	m := map[string]binding{}
	for _, d := range devs {
		if d.Addr == "" {
			return nil, fmt.Errorf("uiod devices --json: a device without an address")
		}
		m[d.Addr] = binding{id: d.Vendor + ":" + d.Device, driver: d.Driver, interfaces: strings.Join(d.Interfaces, ",")}
	}
	return m, nil
}

// lspciDevice is one record of `lspci -Dvmmnnk`.
type lspciDevice struct {
	class, vendor, device, driver string
}

// parseLspci returns the records of `lspci -Dvmmnnk` (tab-separated "Key:\tvalue [id]" lines,
// a blank line after each function) by slot. The numbers are the bracketed ids.
func parseLspci(out string) (map[string]lspciDevice, error) {
	m := map[string]lspciDevice{}
	var slot string
	var d lspciDevice
	flush := func() {
		if slot != "" {
			m[slot] = d
		}
		slot, d = "", lspciDevice{}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(l, ":\t")
		if !ok {
			return nil, fmt.Errorf("lspci line %q is not key:\\tvalue", l)
		}
		switch k {
		case "Slot":
			slot = v
		case "Class":
			d.class = bracketed(v)
		case "Vendor":
			d.vendor = bracketed(v)
		case "Device":
			d.device = bracketed(v)
		case "Driver":
			d.driver = v
		}
	}
	flush()
	return m, nil
}

// bracketed returns the id at the end of an lspci -nn value ("Intel Corporation [8086]").
func bracketed(v string) string {
	i := strings.LastIndex(v, " [")
	if i < 0 || !strings.HasSuffix(v, "]") {
		return v
	}
	return v[i+2 : len(v)-1]
}

// devbindLine is one device of `dpdk-devbind.py --status`'s network sections:
// 0000:01:00.0 '82576 Gigabit Network Connection 10c9' if=eth0 drv=igb unused=vfio-pci *Active*
type devbindLine struct {
	device     string // the device id, the last word of the quoted name
	driver     string
	interfaces string
	section    string
}

// parseDevbindStatus returns the devices of the "Network devices ..." and "Other Network
// devices" sections of `dpdk-devbind.py --status` by PCI address.
func parseDevbindStatus(out string) (map[string]devbindLine, error) {
	m := map[string]devbindLine{}
	lines := strings.Split(out, "\n")
	section := ""
	for i, l := range lines {
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "===") && l != "" {
			section = l
			continue
		}
		if strings.HasPrefix(l, "===") || l == "" || l == "<none>" {
			continue
		}
		if !strings.HasPrefix(section, "Network devices ") && section != "Other Network devices" {
			continue
		}
		addr, rest, ok := strings.Cut(l, " '")
		j := strings.LastIndexByte(rest, '\'')
		if !ok || j < 0 {
			return nil, fmt.Errorf("dpdk-devbind line %q: no quoted name", l)
		}
		words := strings.Fields(rest[:j])
		if len(words) == 0 {
			return nil, fmt.Errorf("dpdk-devbind line %q: empty name", l)
		}
		d := devbindLine{device: words[len(words)-1], section: section}
		for _, f := range strings.Fields(rest[j+1:]) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "drv":
				d.driver = v
			case "if":
				d.interfaces = v
			}
		}
		m[addr] = d
	}
	return m, nil
}

// devbindBindings joins dpdk-devbind's network devices with the vendor ids of the lspci
// records it read (its listing shows only the device id).
func devbindBindings(status, lspci string) (map[string]binding, error) {
	st, err := parseDevbindStatus(status)
	if err != nil {
		return nil, err
	}
	recs, err := parseLspci(lspci)
	if err != nil {
		return nil, err
	}
	m := map[string]binding{}
	for addr, d := range st {
		vendor := "?"
		if r, ok := recs[addr]; ok {
			vendor = r.vendor
		}
		m[addr] = binding{id: vendor + ":" + d.device, driver: d.driver, interfaces: d.interfaces}
	}
	return m, nil
}

package pcihost

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/uiod/uiod/pci"
)

// Route flags shared by /proc/net/route and /proc/net/ipv6_route (linux/route.h).
const (
	rtfUp     = 0x0001
	rtfReject = 0x0200
)

// parseIPv4Routes parses /proc/net/route and adds to active every interface that has an
// usable (up, not reject) route whose destination is not link-local (169.254.0.0/16).
func parseIPv4Routes(data []byte, active map[string]bool) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if i == 0 {
			if string(f[0]) != "Iface" {
				return fmt.Errorf("%w route table: line 1 is not the Iface header", pci.ErrMalformed)
			}
			continue
		}
		if len(f) < 8 {
			return fmt.Errorf("%w route table: line %d has %d fields, want 11", pci.ErrMalformed, i+1, len(f))
		}
		dst, err1 := strconv.ParseUint(string(f[1]), 16, 32)
		flags, err2 := strconv.ParseUint(string(f[3]), 16, 32)
		if err := errors.Join(err1, err2); err != nil || len(f[1]) != 8 {
			return fmt.Errorf("%w route table: line %d: bad destination or flags", pci.ErrMalformed, i+1)
		}
		if flags&rtfUp == 0 || flags&rtfReject != 0 {
			continue
		}
		// The kernel prints the address as a host-order number.
		var ip [4]byte
		binary.NativeEndian.PutUint32(ip[:], uint32(dst))
		if ip[0] == 169 && ip[1] == 254 {
			continue
		}
		active[string(f[0])] = true
	}
	return nil
}

// parseIPv6Routes parses /proc/net/ipv6_route and adds to active every interface that has
// an usable route whose destination is neither link-local (fe80::/10) nor multicast
// (ff00::/8).
func parseIPv6Routes(data []byte, active map[string]bool) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 10 {
			return fmt.Errorf("%w ipv6 route table: line %d has %d fields, want 10", pci.ErrMalformed, i+1, len(f))
		}
		if len(f[0]) != 32 {
			return fmt.Errorf("%w ipv6 route table: line %d: destination is not 32 hex digits", pci.ErrMalformed, i+1)
		}
		var dst [16]byte
		_, err := hex.Decode(dst[:], f[0])
		flags, err2 := strconv.ParseUint(string(f[8]), 16, 32)
		if err != nil || err2 != nil {
			return fmt.Errorf("%w ipv6 route table: line %d: bad destination or flags", pci.ErrMalformed, i+1)
		}
		if flags&rtfUp == 0 || flags&rtfReject != 0 {
			continue
		}
		if dst[0] == 0xff || (dst[0] == 0xfe && dst[1]&0xc0 == 0x80) {
			continue
		}
		active[string(f[9])] = true
	}
	return nil
}

// activeInterfaces returns the interfaces with a non-link-local route in
// <root>/proc/net/route or <root>/proc/net/ipv6_route. A missing file has no routes (a
// host without IPv6 has no ipv6_route); a malformed one is an error.
func (h *Host) activeInterfaces() (map[string]bool, error) {
	active := make(map[string]bool)
	for _, f := range []struct {
		name  string
		parse func([]byte, map[string]bool) error
	}{
		{"proc/net/route", parseIPv4Routes},
		{"proc/net/ipv6_route", parseIPv6Routes},
	} {
		b, err := h.ReadFile(f.name, maxRouteTableSize)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read /%s: %w", f.name, err)
		}
		if err := f.parse(b, active); err != nil {
			return nil, fmt.Errorf("/%s: %w", filepath.ToSlash(f.name), err)
		}
	}
	return active, nil
}

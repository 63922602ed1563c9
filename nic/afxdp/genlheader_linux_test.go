package afxdp

import (
	"errors"
	"syscall"
	"testing"

	vnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestVishvanandaGenlHeader is why the netdev family is spoken through mdlayher/genetlink
// and not vishvananda/netlink's generic request path (docs/design.md, "Why not
// vishvananda/netlink for the netdev family"): its nl.Genlmsg is a 2-byte struct (cmd,
// version) that Serialize sends as the 4-byte genlmsghdr, so the header's reserved word is
// whatever two bytes follow the struct in memory. The netdev family validates strictly
// and refuses a non-zero reserved word with EINVAL ("genlmsghdr.reserved field is not 0");
// older families do not look. So its requests fail or pass by what the allocator put next
// to the header — the EINVAL that the AF_XDP study saw for napi-get, queue-get and
// napi-set, which the same messages sent by hand never got. Here the two bytes after the
// header are made non-zero on purpose, and the same dump with them zero passes, and so
// does Netdev's (mdlayher/genetlink, whose header encoder writes the word as zero).
// vishvananda/netlink fixed it after v1.3.1 (a Reserved field); no release has it yet.
func TestVishvanandaGenlHeader(t *testing.T) {
	fam, err := vnl.GenlFamilyGet("netdev")
	if err != nil {
		t.Skipf("no netdev generic netlink family: %v", err)
	}
	// hdr lays two bytes after the header that Serialize reads as the reserved word.
	type hdr struct {
		g    nl.Genlmsg
		next uint16
	}
	dump := func(next uint16) error {
		h := &hdr{g: nl.Genlmsg{Command: netdevCmdDevGet, Version: uint8(fam.Version)}, next: next}
		if n := len(h.g.Serialize()); n != 4 {
			t.Skipf("nl.Genlmsg serializes %d bytes: the library changed", n)
		}
		req := nl.NewNetlinkRequest(int(fam.ID), unix.NLM_F_DUMP)
		req.AddData(&h.g)
		_, err := req.Execute(unix.NETLINK_GENERIC, 0)
		return err
	}
	if err := dump(0); err != nil {
		t.Fatalf("dev-get dump with the word after the header zero: %v", err)
	}
	err = dump(0xffff)
	if err == nil {
		t.Skip("the kernel took a non-zero genlmsghdr.reserved (an older, lax netdev family)")
	}
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("dev-get dump with the word after the header non-zero: %v, want EINVAL", err)
	}
	nd, err := DialNetdev()
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	if _, err := nd.Devices(); err != nil {
		t.Fatalf("the same dump through mdlayher/genetlink: %v", err)
	}
}

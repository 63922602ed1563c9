//go:build linux

package afxdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// progName is the XDP program's name as bpftool and `ip link` show it.
const progName = "uiod_xsk"

// xdpMdRxQueueIndex is the offset of rx_queue_index in struct xdp_md.
const xdpMdRxQueueIndex = 16

// program returns the XDP program: every frame of a queue whose socket is in xsks goes
// to that socket, every other frame to the kernel stack. bpf_redirect_map's flags carry
// the action for a missing entry (XDP_PASS), so an unbound queue needs no lookup first.
func program(xsksFD int) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, xdpMdRxQueueIndex, asm.Word), // r2 = ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, xsksFD),                           // r1 = &xsks
		asm.Mov.Imm(asm.R3, int32(xdpPass)),                      // r3 = XDP_PASS
		asm.FnRedirectMap.Call(),                                 // r0 = bpf_redirect_map(r1, r2, r3)
		asm.Return(),
	}
}

// xdpPass is enum xdp_action's XDP_PASS.
const xdpPass = 2

// loaded is the port's XDP program and its map, attached or not.
type loaded struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	link link.Link
	mode Mode // ModeNative or ModeGeneric once attached
}

// loadProgram creates the XSKMAP and loads the program.
func loadProgram() (*loaded, error) {
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "uiod_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: MaxQueues})
	if err != nil {
		return nil, fmt.Errorf("XSKMAP: %w", bpfErr(err))
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: progName, Type: ebpf.XDP, License: "GPL", Instructions: program(xsks.FD())})
	if err != nil {
		xsks.Close()
		return nil, fmt.Errorf("XDP program: %w", bpfErr(err))
	}
	return &loaded{xsks: xsks, prog: prog}, nil
}

// bpfErr adds the capabilities to a permission error.
func bpfErr(err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (needs CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN)", err)
	}
	return err
}

// attach attaches the program to ifindex through a bpf_link in mode m; auto tries native
// first and falls back to generic, calling fallback with native's error.
func (l *loaded) attach(ifindex int, m Mode, fallback func(error)) error {
	try := func(flags link.XDPAttachFlags) error {
		lk, err := link.AttachXDP(link.XDPOptions{Program: l.prog, Interface: ifindex, Flags: flags})
		if err != nil {
			return err
		}
		l.link = lk
		return nil
	}
	switch m {
	case ModeNative:
		l.mode = ModeNative
		return try(link.XDPDriverMode)
	case ModeGeneric:
		l.mode = ModeGeneric
		return try(link.XDPGenericMode)
	}
	l.mode = ModeNative
	err := try(link.XDPDriverMode)
	if err == nil {
		return nil
	}
	fallback(err)
	l.mode = ModeGeneric
	return try(link.XDPGenericMode)
}

// close detaches (the link) and unloads.
func (l *loaded) close() error {
	var err error
	if l.link != nil {
		err = l.link.Close()
	}
	return errors.Join(err, l.prog.Close(), l.xsks.Close())
}

// attachedProgram describes the XDP program attached to the link, or "" if none.
func attachedProgram(lk netlink.Link) (id uint32, desc string) {
	x := lk.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return 0, ""
	}
	desc = fmt.Sprintf("id %d", x.ProgId)
	if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(x.ProgId)); err == nil {
		if info, err := p.Info(); err == nil && info.Name != "" {
			desc += fmt.Sprintf(", name %q", info.Name)
		}
		p.Close()
	}
	return x.ProgId, desc
}

// detachNetlink removes an XDP program attached through netlink in the mode it is
// attached in; a program a bpf_link holds stays, which the caller sees by looking again.
// It uses the calling thread's namespace: Open's.
func detachNetlink(lk netlink.Link) error {
	flags := unix.XDP_FLAGS_DRV_MODE
	if x := lk.Attrs().Xdp; x != nil && x.AttachMode == xdpAttachedSKB {
		flags = unix.XDP_FLAGS_SKB_MODE
	}
	return netlink.LinkSetXdpFdWithFlags(lk, -1, flags)
}

// xdpAttachedSKB is IFLA_XDP_ATTACHED's XDP_ATTACHED_SKB.
const xdpAttachedSKB = 2

//go:build linux

package afxdp

import (
	"encoding/binary"
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

// Offsets in struct xdp_md.
const (
	xdpMdData         = 0
	xdpMdDataEnd      = 4
	xdpMdRxQueueIndex = 16
)

// program returns the XDP program: a frame whose EtherType is one of pass goes to the
// kernel stack; every other frame of a queue whose socket is in xsks goes to that socket,
// and of any other queue to the kernel stack. bpf_redirect_map's flags carry the action
// for a missing entry (XDP_PASS), so an unbound queue needs no lookup first. Without pass
// the program is the five instructions of the redirect alone; with it, a bounds check and
// one compare per EtherType come first (frames shorter than an Ethernet header are
// redirected: they are no protocol's the kernel would take). Only the outer EtherType
// counts: a VLAN-tagged frame is 0x8100's.
func program(xsksFD int, pass []uint16) asm.Instructions {
	var ins asm.Instructions
	if len(pass) > 0 {
		ins = append(ins,
			asm.LoadMem(asm.R2, asm.R1, xdpMdData, asm.Word),    // r2 = ctx->data
			asm.LoadMem(asm.R3, asm.R1, xdpMdDataEnd, asm.Word), // r3 = ctx->data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14),                   // r4 = data + ETH_HLEN
			asm.JGT.Reg(asm.R4, asm.R3, "redirect"),   // short frame: the socket's
			asm.LoadMem(asm.R4, asm.R2, 12, asm.Half), // r4 = h_proto, as the wire has it
		)
		for _, et := range pass {
			ins = append(ins, asm.JEq.Imm(asm.R4, int32(wireOrder(et)), "pass"))
		}
		ins = append(ins, asm.Ja.Label("redirect"))
		ins = append(ins,
			asm.Mov.Imm(asm.R0, int32(xdpPass)).WithSymbol("pass"),
			asm.Return(),
		)
	}
	redirect := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, xdpMdRxQueueIndex, asm.Word), // r2 = ctx->rx_queue_index
		asm.LoadMapPtr(asm.R1, xsksFD),                           // r1 = &xsks
		asm.Mov.Imm(asm.R3, int32(xdpPass)),                      // r3 = XDP_PASS
		asm.FnRedirectMap.Call(),                                 // r0 = bpf_redirect_map(r1, r2, r3)
		asm.Return(),
	}
	if len(pass) > 0 {
		redirect[0] = redirect[0].WithSymbol("redirect")
	}
	return append(ins, redirect...)
}

// wireOrder is the 16-bit value a load of the big-endian EtherType et yields on this
// host.
func wireOrder(et uint16) uint16 {
	return binary.NativeEndian.Uint16([]byte{byte(et >> 8), byte(et)})
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

// loadProgram creates the XSKMAP and loads the program, passing the EtherTypes pass to
// the kernel stack; frags loads it as one that handles multi-buffer frames
// (BPF_F_XDP_HAS_FRAGS: it reads only the Ethernet header, in the first buffer).
func loadProgram(pass []uint16, frags bool) (*loaded, error) {
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "uiod_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: MaxQueues})
	if err != nil {
		return nil, fmt.Errorf("XSKMAP: %w", bpfErr(err))
	}
	spec := &ebpf.ProgramSpec{Name: progName, Type: ebpf.XDP, License: "GPL", Instructions: program(xsks.FD(), pass)}
	if frags {
		spec.Flags = unix.BPF_F_XDP_HAS_FRAGS
	}
	prog, err := ebpf.NewProgram(spec)
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

// Package afxdp is a kernel network interface's queues as a nic.Port through AF_XDP
// sockets: uiod on any NIC Linux has a driver for, without unbinding it. One socket per
// (interface, queue), each with its own UMEM (that queue's mempools), fill, completion,
// RX and TX rings; an XDP program assembled here (cilium/ebpf's asm, no object file)
// and attached through a bpf_link redirects the bound queues' frames to the sockets
// and passes the rest to the kernel stack. The kernel detaches the program when the
// process exits, however it exits. A socket's descriptor is its queue's RX vector: the
// idle policies sleep on it as on an MSI-X eventfd. See docs/design.md, "AF_XDP ports".
package afxdp

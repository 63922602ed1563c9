// Package afxdp holds the side-by-side benchmark of uiod's af_xdp ports against DPDK
// 22.11's net_af_xdp (Debian's dpdk-testpmd in macswap) and against the kernel answering
// itself, on one veth pair in one run: the same ICMP echo probes, sent through AF_PACKET
// from the far end, come back from whichever forwarder holds the near end. A short
// version runs inside `go test` as root (it asserts only that each forwarder answers and
// that adaptive idles below busy); the long one is bench/afxdp/run.sh. See BENCHMARKS.md.
package afxdp

// Package vhost holds the side-by-side benchmark of uiod's vhost-user back end against
// DPDK 22.11's net_vhost (Debian's dpdk-testpmd) on the host: the same virtio-user client
// (testpmd macswap) behind each back end in turn, both bridging it to the same veth pair in
// a network namespace, probed the same way. It is run by hand (bench/vhost/run.sh), not by
// `make test`: see BENCHMARKS.md.
package vhost

// Package dpdk holds the side-by-side benchmark of uiod against DPDK 22.11 (Debian's
// dpdk-testpmd and the l3fwd-power example) in one QEMU guest boot, on the same two
// emulated 82576 NICs under vfio-pci, probed from the host the same way. It is run by hand
// (bench/dpdk/run.sh), not by `make test`: see BENCHMARKS.md.
package dpdk

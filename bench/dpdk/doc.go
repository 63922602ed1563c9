// Package dpdk holds the side-by-side benchmark of uiod against DPDK 22.11 (Debian's
// dpdk-testpmd and the l3fwd-power example) in one QEMU guest boot, on the same two
// emulated 82576 NICs under vfio-pci, probed from the host the same way. The full
// comparison is run by hand (bench/dpdk/run.sh; see BENCHMARKS.md); `make test` runs the
// shorter guest tests whose prerequisites are present (root, QEMU, Debian's dpdk): uiod's
// l3fwd beside l3fwd-power, the device-clock comparison with testpmd and the VF side by side.
package dpdk

// Package sidebyside is the harness of the side-by-side benchmarks that put uiod next to a
// DPDK program on the host (bench/ovs, bench/vhost): the set-up they share (root, DPDK's
// testpmd and af_packet PMD, a uiod binary, a network namespace with the veth pair
// vethA/vethB), the rounds with the contenders' order rotated, one measurement (start the
// contender and its peer, probe until a short run comes back whole, then the measured
// probes and an idle stretch with the contender's CPU read around each) and the Markdown
// report: every round, each contender's medians and their ratios to the baseline's.
package sidebyside

#!/bin/bash
# run.sh: the side-by-side benchmark of uiod and DPDK 22.11 in one QEMU guest boot.
#
#   bench/dpdk/run.sh [rounds=2] [probes=5000] [rates]
#
# rates (e.g. "0.5,2.5,10,50", kpps) makes it a rate sweep: per round every rate, with
# every forwarder, the probes 1/rate apart and their number scaled so each rate's probing
# lasts 1-10 s; the report then compares the default policy with l3fwd-power rate by
# rate. Without, the probes are 400 µs apart (2.5 kpps).
#
# As root on Debian 12: installs Debian's DPDK (dpdk dpdk-dev libdpdk-dev dpdk-doc) and what
# the QEMU guest needs (scripts/qemu-setup.sh), builds the l3fwd-power example from
# /usr/share/dpdk/examples with pkg-config libdpdk into .cache/dpdk (with an LPM route for
# the probes' 192.0.2.0/24 towards port 1), then boots one guest (2 vCPUs, 2 GiB, 512 huge
# pages, intel-iommu, tsc=reliable) with two igb NICs on vfio-pci and measures testpmd
# (io forwarding), l3fwd-power (--interrupt-only), uiod busy (with and without the poll
# thread's runtime yield), uiod adaptive and uiod auto in turn, rounds times with the order
# rotated, the host probing each from NIC 0 to NIC 1
# (then, after an idle stretch, a burst of 20 000 probes at 100 kpps: the "burst %" column).
# The table lands in .cache/dpdk/report.md and in the test log. A second, smaller guest
# then lists the NICs with `uiod devices` and Debian's dpdk-devbind.py --status before,
# during and after a bind and checks that both report the same drivers
# (.cache/dpdk/devbind.md).
set -euo pipefail
rounds=${1:-2}
probes=${2:-5000}
rates=${3:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=$repo/.cache/dpdk
export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 1; }

need=()
for p in dpdk dpdk-dev libdpdk-dev dpdk-doc pkg-config gcc make; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
bash "$repo/scripts/qemu-setup.sh"

bin=$(bash "$repo/bench/dpdk/build-l3fwd-power.sh" "$cache")

cd "$repo"
UIOD_DPDK_BENCH=1 UIOD_L3FWD_POWER=$bin UIOD_DPDK_REPORT=$cache/report.md UIOD_DEVBIND_REPORT=$cache/devbind.md \
	go test -count=1 -v -timeout 300m -run '^(TestDPDKSideBySide|TestDevbindSideBySide)$' ./bench/dpdk \
	-args -dpdk.rounds "$rounds" -dpdk.probes "$probes" ${rates:+-dpdk.rates "$rates"}
echo "reports: $cache/report.md $cache/devbind.md"

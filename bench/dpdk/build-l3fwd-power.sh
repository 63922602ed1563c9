#!/bin/bash
# build-l3fwd-power.sh CACHE: builds DPDK's l3fwd-power example from Debian's dpdk-doc sources
# (/usr/share/dpdk/examples) with pkg-config libdpdk into CACHE/l3fwd-power, with an LPM route
# for the probes' 192.0.2.0/24 towards port 1, and prints the binary's path. Rebuilds only when
# the sources are newer. Needs dpdk-dev, libdpdk-dev, dpdk-doc, pkg-config, gcc and make.
set -euo pipefail
cache=$1
src=/usr/share/dpdk/examples/l3fwd-power
bin=$cache/l3fwd-power/build/l3fwd-power
[ -f "$src/main.c" ] || { echo "build-l3fwd-power.sh: no $src (apt-get install dpdk-doc)" >&2; exit 1; }
if [ ! -x "$bin" ] || [ "$src/main.c" -nt "$bin" ]; then
	rm -rf "$cache/l3fwd-power"
	mkdir -p "$cache"
	cp -r "$src" "$cache/l3fwd-power"
	# The probes go to 192.0.2.2 (TEST-NET-1): route that /24 to port 1.
	sed -i 's/^\(\t{RTE_IPV4(1,1,1,0), 24, 0},\)$/\t{RTE_IPV4(192,0,2,0), 24, 1},\n\1/' "$cache/l3fwd-power/main.c"
	grep -q 'RTE_IPV4(192,0,2,0), 24, 1' "$cache/l3fwd-power/main.c" ||
		{ echo "build-l3fwd-power.sh: could not add the probe route to l3fwd-power's LPM table" >&2; exit 1; }
	make -s -C "$cache/l3fwd-power" shared >&2
fi
echo "$bin"

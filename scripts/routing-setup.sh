#!/bin/bash
# routing-setup.sh installs the routing daemon the router's integration test runs against
# (daemon: TestIntegrationRoutesFromBIRD): Debian's bird2. As root; idempotent: it changes
# nothing and exits 0 when bird is already installed. Without it the test skips.
#
# Usage: scripts/routing-setup.sh
set -euo pipefail
APT=(apt-get -y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0)
export DEBIAN_FRONTEND=noninteractive

say() { echo "routing-setup: $*"; }
die() { echo "routing-setup: $*" >&2; exit 1; }

if command -v bird >/dev/null && command -v birdc >/dev/null; then
	say "bird: $(bird --version 2>&1 | head -1)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"
say "apt-get install bird2"
"${APT[@]}" update >/dev/null
"${APT[@]}" install --no-install-recommends bird2 >/dev/null
# The package starts its own daemon on the host: the test runs its own instances in
# network namespaces, and the host's is not wanted.
if command -v systemctl >/dev/null && systemctl is-enabled bird >/dev/null 2>&1; then
	systemctl disable --now bird >/dev/null 2>&1 || true
fi
say "bird: $(bird --version 2>&1 | head -1)"

# prologue.sh: the start every host side-by-side bench's run.sh shares (bench/ovs,
# bench/vhost), sourced as
#
#   . "$(dirname "$0")/../../testrig/sidebyside/prologue.sh" NAME "$@"
#
# It sets rounds and probes from the run.sh's arguments (3 and 5000 by default), repo (the
# checkout) and cache (.cache/NAME, created), and exits unless it runs as root with
# dpdk-testpmd on PATH; the shell is left in repo.
set -euo pipefail
name=$1
shift
rounds=${1:-3}
probes=${2:-5000}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=$repo/.cache/$name
[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "run.sh: dpdk-testpmd missing (apt-get install dpdk)" >&2; exit 1; }
mkdir -p "$cache"
cd "$repo"

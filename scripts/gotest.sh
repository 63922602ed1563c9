#!/bin/bash
# gotest.sh: `go test -count=1 -timeout 40m ./...` for `make test`, with one exception to
# "a failure fails": a QEMU guest test whose guest kernel stalled (lost timer interrupts
# under TCG with two vCPUs; testrig/qemutest/stall.go) is rerun (at most twice). It reruns only when
# every failure is such a test: each failing top-level test was recorded by the harness as
# stalled, every failing package is a guest package, and nothing panicked or failed to
# build. The rerun must pass and must run the tests; one that stalls again the same way is
# rerun once more.
#
#   scripts/gotest.sh [go test flags and packages]   (default: ./...)
set -uo pipefail
GO=${GO:-go}
guest_pkgs='github.com/uiod/uiod/integration github.com/uiod/uiod/testrig/qemutest github.com/uiod/uiod/bench/dpdk'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export UIOD_QEMU_STALLS=$tmp/stalls
[ $# -gt 0 ] || set -- ./...
"$GO" test -count=1 -timeout 40m "$@" 2>&1 | tee "$tmp/log"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && exit 0
# A guest that stalled again on its rerun (QEMU TCG loses a 2-vCPU guest's timer
# interrupts now and then, whatever the test) gets one more: at most two reruns, each only
# when every failure of the run before was a recorded stall.
log=$tmp/log
for attempt in 1 2; do
	[ -s "$UIOD_QEMU_STALLS" ] || exit "$rc"
	if grep -qE '^panic: |\[build failed\]|\[setup failed\]' "$log"; then exit "$rc"; fi
	failed=$(sed -n 's/^--- FAIL: \(Test[^ ]*\) .*/\1/p' "$log" | sort -u)
	[ -n "$failed" ] || exit "$rc"
	for t in $failed; do
		grep -qx "$t" "$UIOD_QEMU_STALLS" || exit "$rc"
	done
	pkgs=$(sed -n 's/^FAIL\t\([^ \t]*\).*/\1/p' "$log" | sort -u)
	for p in $pkgs; do
		case " $guest_pkgs " in *" $p "*) ;; *) exit "$rc" ;; esac
	done
	run="^($(echo $failed | tr ' ' '|'))\$"
	echo "gotest.sh: the guest kernel stalled under $failed (see the log above); rerun $attempt of at most 2: go test -run '$run' $pkgs"
	rm -f "$UIOD_QEMU_STALLS"
	log=$tmp/rerun$attempt
	"$GO" test -count=1 -timeout 40m -run "$run" $pkgs 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" = 0 ] && grep -q 'no tests to run' "$log"; then
		echo "gotest.sh: the rerun ran no test" >&2
		exit 1
	fi
	[ "$rc" = 0 ] && exit 0
done
exit "$rc"

# Guest side of TestDevbindSideBySide (devbind_test.go), run by the qemutest /init as root in
# /tmp. It lists the PCI network devices with `uiod devices` (text and --json), with
# `dpdk-devbind.py --status` and with the `lspci -Dvmmnnk` that dpdk-devbind parses, in four
# states: cold (the first run after boot: Python compiles the stdlib's bytecode), before
# binding, with the igb NICs bound to vfio-pci by uiod, and after `uiod unbind --restore`.
# Each listing's stdout is printed between "DEVBIND BEGIN state tool" and
# "DEVBIND END state tool rc=N real=s user=s sys=s" (busybox time: 10 ms resolution), each
# line of its stderr before the end as "DEVBIND stderr: line".
set -u
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
fail() {
	echo "DEVBIND FAIL $*"
	exit 1
}
IGB=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x8086:0x10c9 ] && IGB="$IGB ${d##*/}"
done
IGB=${IGB# }
[ -n "$IGB" ] || fail "no igb NIC"
echo "DEVBIND igb $IGB"

# listing STATE TOOL COMMAND...: run COMMAND timed, its output between markers.
listing() {
	state=$1 tool=$2
	shift 2
	echo "DEVBIND BEGIN $state $tool"
	busybox time -o /tmp/devbind.time -f "real=%e user=%U sys=%S" "$@" >/tmp/devbind.out 2>/tmp/devbind.err
	rc=$?
	cat /tmp/devbind.out
	sed 's/^/DEVBIND stderr: /' /tmp/devbind.err
	echo "DEVBIND END $state $tool rc=$rc $(grep -o 'real=.*' /tmp/devbind.time)"
}
# listings STATE: every tool's listing.
listings() {
	listing "$1" uiod uiod devices
	listing "$1" devbind python3 -S -E /usr/bin/dpdk-devbind.py --status
	listing "$1" uiod-json uiod devices --json
	listing "$1" lspci lspci -Dvmmnnk
}

listings cold
echo "DEVBIND pycache $(find /usr/lib/python3.11 -name '*.pyc' | wc -l) bytecode files written by the cold run"
listings before
uiod bind --driver vfio-pci $IGB || fail "uiod bind --driver vfio-pci $IGB"
listings bound
uiod unbind --restore $IGB || fail "uiod unbind --restore $IGB"
listings restored
echo "DEVBIND DONE"

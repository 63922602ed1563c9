#!/bin/bash
# qemu-setup.sh installs what the QEMU guest integration tests need, on Debian 12 (bookworm),
# as root. Idempotent: it changes nothing and exits 0 when everything is already in place.
#
#   - the bookworm-backports apt source, in its own file under /etc/apt/sources.list.d/
#   - qemu-system-x86 from bookworm-backports (QEMU >= 8 has the igb device; bookworm's 7.2 has not)
#   - busybox-static, cpio, xz-utils, zstd
#   - the kernel image package that linux-image-amd64 points at, downloaded (never installed)
#     and extracted with dpkg-deb -x into .cache/qemu/debian-kernel/ inside the repository,
#     plus its uncompressed vmlinux (boot/vmlinux-*) for a faster direct (PVH) boot
#
# Usage: scripts/qemu-setup.sh        (env UIOD_QEMU_CACHE overrides .cache/qemu)
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${UIOD_QEMU_CACHE:-$REPO/.cache/qemu}
KDIR=$CACHE/debian-kernel
SOURCES=/etc/apt/sources.list.d/uiod-bookworm-backports.sources
APT=(apt-get -y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0)
export DEBIAN_FRONTEND=noninteractive

say() { echo "qemu-setup: $*"; }
die() { echo "qemu-setup: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"
# shellcheck disable=SC1091
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || say "warning: written for Debian bookworm, this is ${PRETTY_NAME:-unknown}"

updated=0
apt_update() {
	[ "$updated" = 1 ] && return 0
	say "apt-get update"
	"${APT[@]}" update >/dev/null
	updated=1
}

# 1. bookworm-backports source.
if grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	say "bookworm-backports source: present"
else
	cat >"$SOURCES" <<-'EOF'
		# Added by uiod scripts/qemu-setup.sh: QEMU with the igb device for the guest tests.
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bookworm-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	say "bookworm-backports source: added $SOURCES"
fi
# The backports index must be there before apt can pick packages from it.
if ! ls /var/lib/apt/lists/*bookworm-backports*Packages* >/dev/null 2>&1; then
	apt_update
fi

# 2. QEMU from backports.
qemu_ok() {
	command -v qemu-system-x86_64 >/dev/null || return 1
	qemu-system-x86_64 -device help 2>/dev/null | grep -q '"igb"'
}
if qemu_ok; then
	say "qemu-system-x86: present ($(qemu-system-x86_64 --version | head -1))"
else
	say "installing qemu-system-x86 from bookworm-backports"
	if ! "${APT[@]}" install --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null; then
		apt_update
		"${APT[@]}" install --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
	fi
	qemu_ok || die "qemu-system-x86_64 installed but has no igb device: $(qemu-system-x86_64 --version | head -1)"
	say "qemu-system-x86: installed ($(qemu-system-x86_64 --version | head -1))"
fi

# 3. Small tools: static busybox for the initramfs, and decompressors for kernel modules.
missing=()
for p in busybox-static cpio xz-utils zstd; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	say "busybox-static cpio xz-utils zstd: present"
else
	say "installing ${missing[*]}"
	if ! "${APT[@]}" install --no-install-recommends "${missing[@]}" >/dev/null; then
		apt_update
		"${APT[@]}" install --no-install-recommends "${missing[@]}" >/dev/null
	fi
fi

# 4. The Debian kernel, extracted into the cache (never installed on the host).
if ls "$KDIR"/boot/vmlinuz-* >/dev/null 2>&1 && ls -d "$KDIR"/lib/modules/*/kernel >/dev/null 2>&1; then
	say "debian kernel: present ($(basename "$(ls "$KDIR"/boot/vmlinuz-* | head -1)") in $KDIR)"
else
	# linux-image-amd64 is a metapackage; the image is its linux-image-* dependency.
	image=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -1)
	if [ -z "$image" ]; then
		apt_update
		image=$(apt-cache depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -1)
	fi
	[ -n "$image" ] || die "cannot tell which kernel image linux-image-amd64 depends on"
	dl=$CACHE/download
	mkdir -p "$dl"
	rm -f "$dl"/*.deb
	say "downloading $image"
	if ! (cd "$dl" && apt-get -q -o APT::Sandbox::User=root download "$image" >/dev/null); then
		apt_update
		(cd "$dl" && apt-get -q -o APT::Sandbox::User=root download "$image" >/dev/null)
	fi
	tmp=$CACHE/debian-kernel.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	dpkg-deb -x "$dl"/"$image"_*.deb "$tmp"
	rm -rf "$KDIR"
	mv "$tmp" "$KDIR"
	rm -rf "$dl"
	say "debian kernel: extracted $image into $KDIR"
fi
# 5. The uncompressed kernel beside it: an ELF vmlinux with a PVH entry note boots directly
#    (-kernel vmlinux), skipping the in-guest decompression that costs seconds under TCG.
vmlinuz=$(ls "$KDIR"/boot/vmlinuz-* | head -1)
vmlinux=$KDIR/boot/vmlinux-${vmlinuz##*/vmlinuz-}
if [ -s "$vmlinux" ]; then
	say "uncompressed kernel: present (${vmlinux##*/})"
else
	extracted=
	# magic  decompressor  (the payload is followed by other data: ignore the trailing error)
	for m in '\xfd7zXZ\x00 xz -dc' '\x28\xb5\x2f\xfd zstd -dcq' '\x1f\x8b\x08 gzip -dc'; do
		magic=${m%% *}
		for pos in $(LC_ALL=C grep -obUaP "$magic" "$vmlinuz" | cut -d: -f1 | head -3); do
			tail -c+$((pos + 1)) "$vmlinuz" | ${m#* } >"$vmlinux.tmp" 2>/dev/null || true
			if [ "$(head -c4 "$vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
				mv "$vmlinux.tmp" "$vmlinux"
				extracted=1
				break 2
			fi
		done
	done
	rm -f "$vmlinux.tmp"
	if [ -n "$extracted" ]; then
		say "uncompressed kernel: extracted ${vmlinux##*/}"
	else
		say "uncompressed kernel: could not extract it from ${vmlinuz##*/}; the guest boots the compressed one"
	fi
fi
# 6. DPDK's testpmd: the virtio-user front end of the vhost-user tests (nic/vhost).
if command -v dpdk-testpmd >/dev/null; then
	say "dpdk-testpmd: present"
else
	say "installing dpdk (dpdk-testpmd for the vhost-user tests)"
	if ! "${APT[@]}" install --no-install-recommends dpdk dpdk-dev >/dev/null; then
		apt_update
		"${APT[@]}" install --no-install-recommends dpdk dpdk-dev >/dev/null
	fi
fi
say "ready"

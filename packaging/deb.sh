#!/bin/bash
# deb.sh builds the uiod Debian package with dpkg-deb from a staged tree: the static
# binary (its version stamped: uiod version), the systemd units uiod.service and the
# template uiod@.service (installed, not enabled: starting one rebinds NICs), the example
# configuration as the conffile /etc/uiod/uiod.yaml, the unit's environment file
# /etc/default/uiod (a conffile), man pages, shell completions, the
# Grafana dashboard and the example configurations.
#
#   packaging/deb.sh            # → bin/uiod_<version>_<arch>.deb (the path is printed)
#
# Environment: GO (go), GOARCH (the Go toolchain's), OUT (bin), VERSION (from git:
# the last v* tag, or 0.0~git<date>.<commit>), REVISION (git describe --always --dirty), SOURCE_DATE_EPOCH (the last commit's time:
# the package is reproducible), DEB_MAINTAINER. Needs dpkg-deb and gzip; not root.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
OUT=${OUT:-bin}
GOARCH=${GOARCH:-$("$GO" env GOARCH)}
case "$GOARCH" in
	amd64 | arm64 | riscv64 | ppc64le | s390x) arch=$GOARCH ;;
	386) arch=i386 ;;
	arm) arch=armhf ;;
	*) echo "deb.sh: GOARCH $GOARCH has no Debian architecture here" >&2; exit 2 ;;
esac
for tool in dpkg-deb gzip; do
	command -v "$tool" >/dev/null || { echo "deb.sh: $tool not found (apt-get install dpkg gzip)" >&2; exit 1; }
done

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
if [ -z "${VERSION:-}" ]; then
	if tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		VERSION=${tag#v}
		VERSION=${VERSION//-/+}
	elif rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
		VERSION=0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).$rev
	else
		VERSION=0.0~dev
	fi
fi
case "$VERSION" in
	[0-9]*) ;;
	*) echo "deb.sh: VERSION $VERSION must start with a digit" >&2; exit 2 ;;
esac

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
install -d "$root/DEBIAN" "$root/usr/bin" "$root/etc/uiod" "$root/etc/default" "$root/lib/systemd/system" \
	"$root/usr/share/man/man8" "$root/usr/share/man/man5" "$root/usr/share/bash-completion/completions" \
	"$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d" \
	"$root/usr/share/doc/uiod/examples" "$root/usr/share/doc/uiod/grafana"

# The binary: static (no cgo), no build paths or ids, so two builds are the same bytes;
# `uiod version` says the package version and the tree it was built from.
REVISION=${REVISION:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
stamp="-X main.version=$VERSION -X main.revision=$REVISION"
CGO_ENABLED=0 GOARCH=$GOARCH "$GO" build -trimpath -ldflags "-s -w -buildid= $stamp" -o "$root/usr/bin/uiod" ./cmd/uiod
# What the package generates with uiod runs on this machine: a host binary for it.
tool=$root/usr/bin/uiod
if [ "$GOARCH" != "$("$GO" env GOHOSTARCH)" ]; then
	tool=$stage/uiod-host
	CGO_ENABLED=0 GOARCH= "$GO" build -ldflags "$stamp" -o "$tool" ./cmd/uiod
fi

"$tool" config example >"$root/etc/uiod/uiod.yaml"
"$tool" config validate "$root/etc/uiod/uiod.yaml" >/dev/null
"$tool" man "$root/usr/share/man/man8"
mv "$root/usr/share/man/man8/uiod.yaml.5" "$root/usr/share/man/man5/"
gzip -9n "$root"/usr/share/man/man8/*.8 "$root/usr/share/man/man5/uiod.yaml.5"
"$tool" completion bash >"$root/usr/share/bash-completion/completions/uiod"
"$tool" completion zsh >"$root/usr/share/zsh/vendor-completions/_uiod"
"$tool" completion fish >"$root/usr/share/fish/vendor_completions.d/uiod.fish"
install -m 0644 contrib/uiod.service "$root/lib/systemd/system/uiod.service"
install -m 0644 contrib/uiod@.service "$root/lib/systemd/system/uiod@.service"
install -m 0644 packaging/deb/default "$root/etc/default/uiod"
install -m 0644 contrib/grafana/uiod.json "$root/usr/share/doc/uiod/grafana/uiod.json"
install -m 0644 examples/*.yaml "$root/usr/share/doc/uiod/examples/"
install -m 0644 README.md "$root/usr/share/doc/uiod/README.md"
gzip -9n "$root/usr/share/doc/uiod/README.md"

install -m 0644 packaging/deb/conffiles "$root/DEBIAN/conffiles"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$root/DEBIAN/"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
	-e "s/@MAINTAINER@/${DEB_MAINTAINER:-uiod developers <root@localhost>}/" \
	packaging/deb/control >"$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
chmod -R u=rwX,go=rX "$root"
chmod 0755 "$root/usr/bin/uiod" "$root"/DEBIAN/post* "$root/DEBIAN/prerm"
mkdir -p "$OUT"
deb=$OUT/uiod_${VERSION}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"

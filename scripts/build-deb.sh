#!/usr/bin/env bash
# Builds the askwpd Debian package from the repo: a static binary, the systemd
# unit with its ExecStart pointing at /usr/bin, the sysusers.d and tmpfiles.d
# entries, a commented /etc/askwpd/askwpd.toml conffile and the maintainer scripts
# in packaging/deb/. Prints the path of the .deb on its last line.
#
# Usage: scripts/build-deb.sh [OUTDIR]   (default: bin/, which git ignores)
# Environment: GOARCH (default: the host's), ASKWPD_DEB_MAINTAINER
# ("Name <email>", default: git's user.name and user.email).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"

# nfpm, pinned by version and fetched through the Go module proxy. Not in go.mod's
# tool block: its dependency graph would move one of the daemon's own dependencies
# (sourcegraph/conc) to a pre-release.
nfpm=(go run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2)

outdir="${1:-$root/bin}"
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"
stage="$root/bin/deb-stage"
rm -rf "$stage"
mkdir -p "$stage"

# Versions. The binary reports `git describe`; the package needs a version dpkg
# orders, so a snapshot is 0.0~gitYYYYMMDDhhmmss.HASH (commit time, so a later
# commit sorts after an earlier one) and a tag vX.Y.Z is X.Y.Z.
describe="$(git describe --always --dirty)"
commit_epoch="$(git log -1 --format=%ct)"
if tag="$(git describe --tags --exact-match 2>/dev/null)" && [[ "$tag" =~ ^v?[0-9] ]]; then
  deb_version="${tag#v}"
else
  deb_version="0.0~git$(date -u -d "@$commit_epoch" +%Y%m%d%H%M%S).$(git rev-parse --short HEAD)"
fi
# A dirty tree is not the commit it names; + sorts it after the clean build.
[[ "$describe" == *-dirty ]] && deb_version="$deb_version+dirty"
export ASKWPD_DEB_VERSION="$deb_version"
export GOARCH="${GOARCH:-$(go env GOARCH)}"
export ASKWPD_DEB_ARCH="$GOARCH" # Go and Debian agree on amd64, arm64, 386, riscv64, ppc64le, s390x
export ASKWPD_DEB_MAINTAINER="${ASKWPD_DEB_MAINTAINER:-$(git config user.name) <$(git config user.email)>}"
# Same inputs, same bytes: nfpm and gzip take file times from here.
export SOURCE_DATE_EPOCH="$commit_epoch"

# The version variable lives where the Go code says it does: look for it in the
# packages the binary is built from rather than hard-code a path that may move.
ldflags="-s -w -buildid="
module="$(go list -m)"
version_pkg=""
while read -r dir pkg; do
  if grep -lsE '^var Version( string)? = ' "$dir"/*.go | grep -qv '_test\.go$'; then
    version_pkg="$pkg"
    break
  fi
done < <(go list -deps -f '{{with .Module}}{{if eq .Path "'"$module"'"}}{{$.Dir}} {{$.ImportPath}}{{end}}{{end}}' ./cmd/askwpd)
if [ -n "$version_pkg" ]; then
  [ "$version_pkg" = "$module/cmd/askwpd" ] && version_pkg=main
  ldflags="$ldflags -X $version_pkg.Version=$describe"
else
  echo "build-deb: no 'var Version = ' in the packages of cmd/askwpd; the binary keeps its default version" >&2
fi

echo "build-deb: askwpd $describe, package $deb_version ($GOARCH)" >&2
# Static, so the package depends on no libc; -trimpath keeps build paths out.
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$stage/askwpd" ./cmd/askwpd

# The repo's unit names /usr/local/bin (a hand install); the package installs to /usr/bin.
grep -q '^ExecStart=/usr/local/bin/askwpd ' systemd/askwpd.service \
  || { echo "build-deb: systemd/askwpd.service: ExecStart is not /usr/local/bin/askwpd; update this script" >&2; exit 1; }
{
  echo "# askwpd: the AskWP companion daemon, from the askwpd package."
  echo "# Configuration: /etc/askwpd/askwpd.toml. Local changes: systemctl edit askwpd."
  # Drop the hand-install instructions at the top of the repo's copy.
  sed -n '/^\[Unit\]/,$p' systemd/askwpd.service \
    | sed -e 's#^ExecStart=/usr/local/bin/askwpd #ExecStart=/usr/bin/askwpd #' \
      -e '/^Documentation=/s#$# man:askwpd(1)#'
} >"$stage/askwpd.service"

gzip -9n <packaging/deb/askwpd.1 >"$stage/askwpd.1.gz"
{
  printf 'askwpd (%s) unstable; urgency=medium\n\n' "$deb_version"
  printf '  * Built from commit %s (%s).\n\n' "$(git rev-parse HEAD)" "$describe"
  printf ' -- %s  %s\n' "$ASKWPD_DEB_MAINTAINER" "$(date -u -R -d "@$commit_epoch")"
} | gzip -9n >"$stage/changelog.gz"
touch -d "@$commit_epoch" "$stage"/*

deb="$outdir/askwpd_${deb_version}_${ASKWPD_DEB_ARCH}.deb"
rm -f "$deb"
"${nfpm[@]}" package --config packaging/deb/nfpm.yaml --packager deb --target "$deb" >&2
echo "$deb"

#!/usr/bin/env bash
# Builds the companion plugin as an installable zip: askwpd-companion.zip, holding one
# folder, askwpd-companion/, with the plugin, readme.txt and languages/, and no tests.
# Checks first that every PHP file parses, that the translation template is current,
# that the plugin header, its version constant and readme.txt's Stable tag agree (and
# the header's and readme's Requires at least), and that includes/tool-schemas.json, the
# daemon's tool schemas the abilities are built from, is there (go test ./tool checks
# that it is current).
# File times come from the last commit that touched the plugin (or SOURCE_DATE_EPOCH),
# so the same tree gives the same zip.
#
# Usage: scripts/build-plugin.sh [OUT_DIR]   (default: bin/, which git ignores)
# Prints the zip's path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
src="$root/wp-plugin-shim"
out_dir="${1:-$root/bin}"
die() { printf 'build-plugin.sh: %s\n' "$*" >&2; exit 1; }

command -v php >/dev/null || die "php is not installed"
command -v python3 >/dev/null || die "python3 is not installed"

php "$root/scripts/make-pot.php" --check "$src" 2>/dev/null \
  || die "languages/askwpd-companion.pot is out of date: run php scripts/make-pot.php, and commit it"

header_version=$(sed -n 's/^[ *]*Version:[[:space:]]*//p' "$src/askwpd-companion.php" | head -n1 | tr -d '\r')
const_version=$(sed -n "s/^define( 'ASKWPD_COMPANION_VERSION', '\([^']*\)' );/\1/p" "$src/askwpd-companion.php")
stable_tag=$(sed -n 's/^Stable tag:[[:space:]]*//p' "$src/readme.txt" | tr -d '\r')
[[ -n "$header_version" && "$header_version" == "$const_version" && "$header_version" == "$stable_tag" ]] \
  || die "versions disagree: header '$header_version', ASKWPD_COMPANION_VERSION '$const_version', readme Stable tag '$stable_tag'"

header_requires=$(sed -n 's/^[ *]*Requires at least:[[:space:]]*//p' "$src/askwpd-companion.php" | head -n1 | tr -d '\r')
readme_requires=$(sed -n 's/^Requires at least:[[:space:]]*//p' "$src/readme.txt" | tr -d '\r')
[[ -n "$header_requires" && "$header_requires" == "$readme_requires" ]] \
  || die "Requires at least disagrees: header '$header_requires', readme '$readme_requires'"
php -r '$d = json_decode((string) @file_get_contents($argv[1]), true); exit(is_array($d["tools"] ?? null) && $d["tools"] ? 0 : 1);' \
  "$src/includes/tool-schemas.json" || die "includes/tool-schemas.json is missing or not the tools' schemas: run go generate ./tool"

stage="$(mktemp -d /tmp/askwpd-plugin.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
dst="$stage/askwpd-companion"
mkdir -p "$dst"
for f in askwpd-companion.php uninstall.php readme.txt includes languages; do
  [[ -e "$src/$f" ]] || die "$src/$f is missing"
  cp -R "$src/$f" "$dst/"
done
while IFS= read -r -d '' f; do
  php -l "$f" >/dev/null || { php -l "$f" >&2; die "$f does not parse"; }
done < <(find "$dst" -name '*.php' -print0)

epoch="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct -- wp-plugin-shim 2>/dev/null || true)}"
[[ -n "$epoch" ]] || epoch=$(date +%s)
mkdir -p "$out_dir"
out="$(cd "$out_dir" && pwd -P)/askwpd-companion.zip"
# Python's zipfile rather than zip(1), which is not always installed: sorted entries,
# one time, fixed modes.
python3 - "$stage" "$stage/plugin.zip" "$epoch" <<'PY'
import os, sys, time, zipfile
stage, out, epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])
when = time.gmtime(max(epoch, 315532800))[:6]  # zip times start in 1980
paths = []
for d, dirs, files in os.walk(os.path.join(stage, "askwpd-companion")):
    dirs.sort()
    paths += [os.path.join(d, f) for f in files]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for p in sorted(paths):
        info = zipfile.ZipInfo(os.path.relpath(p, stage), when)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o100644 << 16
        with open(p, "rb") as f:
            z.writestr(info, f.read())
PY
mv -f "$stage/plugin.zip" "$out"
printf '%s\n' "$out"

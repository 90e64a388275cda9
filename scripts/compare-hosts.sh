#!/usr/bin/env bash
# Indexes the fast test site (php -S, scripts/wp-up.sh) and the production-shaped one
# (nginx + php-fpm, scripts/host-up.sh) with `askwpd index`, and compares the URL sets
# after mapping each site's origin to one placeholder. Both are seeded by the same
# seed.php, so a URL on one side only is a real difference between the stacks (or a
# post a concurrent test created on one of them: it says which).
#
# Usage: scripts/compare-hosts.sh [FAST_ENV HOST_ENV]
#   (default .wp-test/env and .wp-host/env of this checkout; ASKWPD_BIN=path uses a built
#   askwpd). Exits 1 when the indexed URL sets differ.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
fast_env="${1:-$root/.wp-test/env}"
host_env="${2:-$root/.wp-host/env}"
die() { printf 'compare-hosts: %s\n' "$*" >&2; exit 1; }
for f in "$fast_env" "$host_env"; do [[ -s "$f" ]] || die "$f is missing (scripts/wp-up.sh, scripts/host-up.sh)"; done
command -v sqlite3 >/dev/null || die "sqlite3 is missing (apt-get install sqlite3)"

tmp="$(mktemp -d /tmp/askwpd-compare.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
bin="${ASKWPD_BIN:-}"
if [[ -z "$bin" ]]; then
  export PATH="$PATH:/usr/local/go/bin"
  (cd "$root" && go build -o "$tmp/askwpd" ./cmd/askwpd) || die "go build failed"
  bin="$tmp/askwpd"
fi

envget() { sed -n "s/^$2=//p" "$1" | head -n1; }

# The seed dates some posts hours before it runs, and each stack's database was seeded
# when its script first ran: across midnight, a post's dated permalink differs by a day
# (/2026/11/24/ on one, /2026/11/25/ on the other) with nothing else different. The
# date in a permalink is replaced by DATE.
undate='s#/[0-9]{4}/[0-9]{2}/[0-9]{2}/#/DATE/#'

# index NAME ENV: one full pass into a state dir of its own; lists the indexed URLs and
# every discovered URL with its state, the origin replaced by ORIGIN.
index() {
  local name="$1" env="$2" site wp_root
  site="$(envget "$env" SITE_URL)"
  wp_root="$(envget "$env" WP_ROOT)"
  "$bin" index --config /dev/null --wp-root "$wp_root" --site-url "$site" --state-dir "$tmp/$name" --full \
    --set crawl.rate_per_sec=50 --log-level warn >"$tmp/$name.log" 2>&1 </dev/null \
    || { tail -n 20 "$tmp/$name.log" >&2; die "askwpd index failed on $site"; }
  sqlite3 -readonly "$tmp/$name/askwpd.db" 'SELECT url FROM documents ORDER BY url' \
    | sed "s#^$site#ORIGIN#" | sed -E "$undate" | sort >"$tmp/$name.indexed"
  sqlite3 -readonly -separator ' ' "$tmp/$name/askwpd.db" 'SELECT url, status, http_status FROM urls ORDER BY url' \
    | sed "s#^$site#ORIGIN#" | sed -E "$undate" | sort >"$tmp/$name.urls"
  printf '%-6s %s: %d indexed, %d discovered\n' "$name" "$site" "$(wc -l <"$tmp/$name.indexed")" "$(wc -l <"$tmp/$name.urls")"
}

index fast "$fast_env"
index nginx "$host_env"

only_fast="$(comm -23 "$tmp/fast.indexed" "$tmp/nginx.indexed")"
only_nginx="$(comm -13 "$tmp/fast.indexed" "$tmp/nginx.indexed")"
if [[ -z "$only_fast$only_nginx" ]]; then
  echo "same indexed URL set: $(wc -l <"$tmp/fast.indexed") URLs"
else
  echo "indexed on php -S only:"; printf '  %s\n' $only_fast
  echo "indexed on nginx only:"; printf '  %s\n' $only_nginx
fi
if ! cmp -s "$tmp/fast.urls" "$tmp/nginx.urls"; then
  echo "discovered URLs whose state differs (< php -S, > nginx):"
  diff "$tmp/fast.urls" "$tmp/nginx.urls" | grep '^[<>]' | sed 's/^/  /' || true
fi
[[ -z "$only_fast$only_nginx" ]]

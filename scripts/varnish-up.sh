#!/usr/bin/env bash
# Brings up the SEO test site behind a Varnish of its own: the WordPress of
# ASKWPD_SITE_NAME=seo (state in .wp-seo/, or $ASKWPD_WP_STATE) with the shim and the SEO
# plugin fixtures (scripts/fixtures/, as must-use plugins, each active only while the
# option askwpd_seo_fixture names it), and Debian's varnishd on a free loopback port in
# front of it, caching HTML for 10 minutes the way a site's page cache does: requests
# with a login, password or wordpress_no_cache cookie pass. Idempotent.
#
# Usage: scripts/varnish-up.sh [--down]
#   --down   stop the varnishd this script started (the site stays up)
# Writes $STATE/varnish.env: VARNISH_URL, VARNISH_PORT, VARNISH_PID, ORIGIN_URL.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
state="${ASKWPD_WP_STATE:-$root/.wp-seo}"
vdir="$state/varnish"
die() { printf 'varnish-up.sh: %s\n' "$*" >&2; exit 1; }
log() { printf '[varnish] %s\n' "$*" >&2; }

ours() { # -> true when the pid in $vdir/varnishd.pid is a varnishd of ours
  local pid
  pid="$(cat "$vdir/varnishd.pid" 2>/dev/null)" || return 1
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -qF "$vdir" "/proc/$pid/cmdline" 2>/dev/null
}

if [[ "${1:-}" == --down ]]; then
  if ours; then
    kill "$(cat "$vdir/varnishd.pid")"
    log "stopped varnishd $(cat "$vdir/varnishd.pid")"
  fi
  rm -f "$state/varnish.env"
  exit 0
fi
[[ -z "${1:-}" ]] || die "unknown argument: $1"
[[ "$(id -u)" == 0 ]] || die "run as root"

ASKWPD_SITE_NAME=seo ASKWPD_WP_STATE="$state" bash "$root/scripts/wp-up.sh" --quiet
ASKWPD_TEST_WP_ENV="$state/env" bash "$root/scripts/shim-up.sh" >/dev/null
while IFS='=' read -r k v; do
  case "$k" in WP_PORT|WP_CONTENT_DIR) printf -v "$k" '%s' "$v" ;; esac
done <"$state/env"
for f in seo-common seo-yoast seo-rankmath; do
  dst="$WP_CONTENT_DIR/mu-plugins/askwpd-$f.php"
  cmp -s "$root/scripts/fixtures/$f.php" "$dst" || install -D -m 0644 "$root/scripts/fixtures/$f.php" "$dst"
done

apt_varnish() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q varnish </dev/null >/dev/null; }
# A fresh machine may have no package lists yet: update once, as test.sh's ensure_apt does.
command -v varnishd >/dev/null || apt_varnish || { apt-get -o DPkg::Lock::Timeout=600 update -qq </dev/null && apt_varnish; } || die "apt-get install varnish failed"
mkdir -p "$vdir"
chmod 0755 "$state" "$vdir"
cat >"$vdir/default.vcl.new" <<VCL
vcl 4.1;
backend wordpress { .host = "127.0.0.1"; .port = "$WP_PORT"; }

sub vcl_recv {
  if (req.method != "GET" && req.method != "HEAD") { return (pass); }
  # The cookies a WordPress page cache passes on: logged in, a post password,
  # a comment author, and wordpress_no_cache, which logs nobody in.
  if (req.http.Cookie ~ "wordpress_logged_in_|wp-postpass_|comment_author_|wordpress_no_cache") { return (pass); }
  if (req.url ~ "^/wp-(admin|login\\\\.php|cron\\\\.php)") { return (pass); }
  unset req.http.Cookie;
  return (hash);
}

sub vcl_backend_response {
  if (beresp.status == 200) {
    unset beresp.http.Set-Cookie;
    unset beresp.http.Cache-Control;
    unset beresp.http.Expires;
    set beresp.ttl = 10m;
  }
}

sub vcl_deliver {
  if (obj.hits > 0) { set resp.http.X-Cache = "HIT"; } else { set resp.http.X-Cache = "MISS"; }
}
VCL
if ours && cmp -s "$vdir/default.vcl.new" "$vdir/default.vcl" && [[ -s "$state/varnish.env" ]]; then
  rm -f "$vdir/default.vcl.new"
else
  if ours; then kill "$(cat "$vdir/varnishd.pid")"; sleep 1; fi
  mv -f "$vdir/default.vcl.new" "$vdir/default.vcl"
  port=""
  for ((p = 6181; p < 6281; p++)); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
  [[ -n "$port" ]] || die "no free port in 6181..6280"
  varnishd -a "127.0.0.1:$port" -f "$vdir/default.vcl" -n "$vdir/work" -P "$vdir/varnishd.pid" \
    -s malloc,64m -T none >"$vdir/varnishd.log" 2>&1 || { cat "$vdir/varnishd.log" >&2; die "varnishd failed"; }
  for ((i = 0; i < 50; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
  printf 'VARNISH_URL=http://127.0.0.1:%s\nVARNISH_PORT=%s\nVARNISH_PID=%s\nORIGIN_URL=http://127.0.0.1:%s\n' \
    "$port" "$port" "$(cat "$vdir/varnishd.pid")" "$WP_PORT" >"$state/varnish.env"
  log "varnishd on 127.0.0.1:$port in front of 127.0.0.1:$WP_PORT"
fi
cat "$state/varnish.env"

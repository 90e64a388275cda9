#!/usr/bin/env bash
# Tests the Debian package for real, as root, on the production-shaped test host
# (nginx + php-fpm as www-data serving WordPress 7.1 from a tree of its own, and an
# `askwpd` user the host setup owns):
#   1. builds the .deb, installs it with dpkg -i, checks files, owners and modes;
#   2. runs the installed binary the way the unit does (systemd is not PID 1 in CI,
#      so ExecStart is started by hand as the unit's user and group), lets it index,
#      and searches for a seeded page with the token from the state dir;
#   3. dpkg -r, then dpkg -P, showing what remains after each;
#   4. the other user path: in a private mount namespace whose /etc is an overlay
#      without `askwpd`, the package creates the user and purge deletes it, and a
#      web group other than www-data gets its overrides;
#   5. Debian's wordpress package layout, with the host's own tree hidden.
# Prints the seconds from dpkg -i to the first searchable page and the package size.
# The machine is left as it was found: the package purged, the host's user kept.
#
# Usage: scripts/deb-test.sh [path/to/askwpd.deb]   (default: build one)
# Environment: ASKWPD_HOST_UP (default scripts/host-up.sh of this repo).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'deb-test: FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf '  ok    %s\n' "$*"; }

[ "$(id -u)" = 0 ] || fail "run as root (dpkg -i, runuser)"
for c in jq curl unshare runuser dpkg-deb; do
  command -v "$c" >/dev/null || fail "$c is missing (apt-get install jq curl util-linux)"
done
if dpkg-query -W -f='${Status}' askwpd 2>/dev/null | grep -q 'installed\|config-files'; then
  fail "the askwpd package is already on this machine; this test installs and purges it, so remove it first"
fi
# Purge deletes the state dir: never let the test eat one it did not make.
for p in /var/lib/askwpd /etc/askwpd; do
  [ ! -e "$p" ] || fail "$p exists before the test; purge would delete it"
done

step "test host (nginx + php-fpm as www-data)"
host_up="${ASKWPD_HOST_UP:-$root/scripts/host-up.sh}"
bash "$host_up" --quiet
host_env="$(cd "$(dirname "$host_up")/.." && pwd)/.wp-host/env"
# shellcheck disable=SC1090
. "$host_env"
echo "site $SITE_URL, web group $WEB_GROUP, wp_root $WP_ROOT"
user_before=no
if getent passwd askwpd >/dev/null; then user_before=yes; fi
groups_before="$(id -nG askwpd 2>/dev/null || true)"
wp_config_group="$(stat -c %G "$WP_CONFIG_FILE")"
echo "user askwpd before the test: $user_before ${groups_before:+(groups: $groups_before)}"

step "build"
tmp="$(mktemp -d)"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  # A failed run must not leave the package behind.
  if dpkg-query -W -f='${Status}' askwpd 2>/dev/null | grep -q 'installed\|config-files'; then
    dpkg -P askwpd >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -n "${1:-}" ]; then
  deb="$1"
else
  deb="$(bash scripts/build-deb.sh "$tmp" | tail -n1)"
fi
deb_bytes="$(stat -c %s "$deb")"
installed_kib="$(dpkg-deb -f "$deb" Installed-Size)"
echo "package $(basename "$deb"): $deb_bytes bytes"
# Lintian's warnings are fixed or overridden with a reason (packaging/deb/README.md).
if command -v lintian >/dev/null; then
  lintian --fail-on error,warning "$deb" 2>&1 | grep -v 'running with root privileges' || true
  lintian --fail-on error,warning "$deb" >/dev/null 2>&1 || fail "lintian: errors or warnings"
  pass "lintian: no errors or warnings"
fi

step "dpkg -i"
# This pass is a host with one site. Our other test sites (the multisite network of
# scripts/network-up.sh) live beside the host's tree, and postinst rightly picks none
# of several: they are hidden from it, in a private mount namespace.
others=()
for d in /var/www/*/ /srv/www/*/; do
  d=${d%/}
  if [ -f "$d/wp-config.php" ] && [ "$d" != "$WP_ROOT" ]; then others+=("$d"); fi
done
mkdir -p "$tmp/empty"
t0="$(date +%s.%N)"
unshare --mount --propagation private bash -euo pipefail -c '
  empty=$1 deb=$2; shift 2
  for d in "$@"; do mount --bind "$empty" "$d"; done
  dpkg -i "$deb"' _ "$tmp/empty" "$deb" "${others[@]}" | tee "$tmp/postinst.log"

step "files, owners, modes"
# path, mode, owner:group, kind
check_file() {
  local path=$1 mode=$2 owner=$3 got
  [ -e "$path" ] || fail "$path is missing"
  got="$(stat -c '%a %U:%G' "$path")"
  [ "$got" = "$mode $owner" ] || fail "$path is $got, want $mode $owner"
  printf '  %-42s %4s  %-16s %s\n' "$path" "$mode" "$owner" "ok"
}
printf '  %-42s %4s  %-16s %s\n' path mode owner ""
check_file /usr/bin/askwpd 755 root:root
check_file /lib/systemd/system/askwpd.service 644 root:root
check_file /usr/lib/sysusers.d/askwpd.conf 644 root:root
check_file /usr/lib/tmpfiles.d/askwpd.conf 644 root:root
check_file /etc/askwpd/askwpd.toml 644 root:root
check_file /usr/share/man/man1/askwpd.1.gz 644 root:root
check_file /usr/share/doc/askwpd/copyright 644 root:root
check_file /var/lib/askwpd 750 "askwpd:$WEB_GROUP"
check_file /run/askwpd 750 "askwpd:$WEB_GROUP"

if grep -qx 'ExecStart=/usr/bin/askwpd serve --config /etc/askwpd/askwpd.toml' /lib/systemd/system/askwpd.service; then
  pass "unit: ExecStart=/usr/bin/askwpd"
else
  fail "unit: ExecStart does not run /usr/bin/askwpd"
fi
for kv in User=askwpd "Group=$WEB_GROUP" StateDirectoryMode=0750 UMask=0027 RuntimeDirectory=askwpd RuntimeDirectoryMode=0750 \
  TimerSlackNSec=1ms; do
  grep -qx "$kv" /lib/systemd/system/askwpd.service || fail "unit: no $kv"
done
pass "unit: User=askwpd Group=$WEB_GROUP StateDirectoryMode=0750 UMask=0027 RuntimeDirectory=askwpd 0750 TimerSlackNSec=1ms"
# verify checks that ExecStart's binary exists: here it is the installed one.
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify /lib/systemd/system/askwpd.service || fail "systemd-analyze verify on the installed unit"
  pass "systemd-analyze verify on the installed unit"
fi
if dpkg-query -W -f='${Conffiles}\n' askwpd | grep -q ' /etc/askwpd/askwpd.toml '; then
  pass "conffile: /etc/askwpd/askwpd.toml"
else
  fail "/etc/askwpd/askwpd.toml is not a conffile"
fi
if grep -qx "wp_root = \"$WP_ROOT\"" /etc/askwpd/askwpd.toml; then
  pass "postinst wrote wp_root = \"$WP_ROOT\""
else
  fail "postinst did not write wp_root = \"$WP_ROOT\""
fi
# Every commented key is one the daemon knows (it rejects unknown keys), with a
# value of the right type: uncomment them all and let the daemon read the file.
sed 's/^#\([a-z_]* = \)/\1/' /etc/askwpd/askwpd.toml >"$tmp/all-keys.toml"
/usr/bin/askwpd doctor --config "$tmp/all-keys.toml" --state-dir "$tmp/doctor-state" >"$tmp/doctor.out" 2>&1 || true
if grep -q '^ok   config' "$tmp/doctor.out"; then
  pass "conffile: all $(grep -c '^[a-z_]* = ' "$tmp/all-keys.toml") keys, uncommented, are read by the daemon"
else
  head -n 3 "$tmp/doctor.out"
  fail "conffile: the daemon does not accept its keys uncommented"
fi
if id -nG askwpd | tr ' ' '\n' | grep -qx "$WEB_GROUP"; then
  pass "user askwpd is in group $WEB_GROUP"
else
  fail "user askwpd is not in group $WEB_GROUP"
fi
if [ "$user_before" = yes ]; then
  [ ! -e /var/lib/askwpd/.package-created-user ] || fail "postinst marked a user it did not create as its own"
  pass "postinst left the existing user unmarked (purge will keep it)"
else
  [ -e /var/lib/askwpd/.package-created-user ] || fail "postinst did not mark the user it created"
  pass "postinst marked the user it created (purge will delete it)"
fi
if [ "$(grep -c '^askwpd: ' "$tmp/postinst.log")" -ge 4 ]; then
  pass "postinst said what it found"
else
  fail "postinst printed fewer than four findings"
fi

step "run ExecStart as the unit's user (askwpd:$WEB_GROUP, UMask 0027)"
if [ -d /run/systemd/system ]; then
  # Where systemd runs, postinst started the unit. It is stopped here so that one
  # daemon owns the state dir: the one below, which is told the site's address.
  echo "systemd: askwpd.service is $(systemctl is-active askwpd.service || true) after postinst; stopping it"
  systemctl stop askwpd.service
fi
exec_start="$(sed -n 's/^ExecStart=//p' /lib/systemd/system/askwpd.service)"
sock=/run/askwpd/askwpd.sock
grep -qx "listen = \"unix:$sock\"" /etc/askwpd/askwpd.toml || fail "the conffile does not listen on $sock"
# The site's address is given, as on a host where one WordPress serves several
# (Debian's /etc/wordpress/config-HOST.php picks the database by host name). The
# address to listen on is the conffile's: the socket in the dir tmpfiles.d made.
# shellcheck disable=SC2086
(umask 0027 && exec runuser -u askwpd -g "$WEB_GROUP" -- $exec_start \
  --site-url "$SITE_URL") >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!

# A seeded, published post and its address: searching its title must find it.
seeded='[.items[] | select(.public == true and .type == "post")][0]'
query="$(jq -r "$seeded.title" "$WP_SEED_MANIFEST")"
want_url="$(jq -r "$seeded.url" "$WP_SEED_MANIFEST")"
echo "query: $query (want $want_url)"
token=""
first_hit=""
# As the PHP shim does: the web server's user reads the token and talks over the socket.
for _ in $(seq 1 600); do
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$tmp/daemon.log"; fail "the daemon exited"; }
  if [ -z "$token" ] && [ -s /var/lib/askwpd/token ]; then token="$(runuser -u "$WEB_GROUP" -- cat /var/lib/askwpd/token || true)"; fi
  if [ -n "$token" ]; then
    body="$(jq -nc --arg q "$query" '{query: $q}')"
    if runuser -u "$WEB_GROUP" -- curl -sf --unix-socket "$sock" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      -d "$body" "http://localhost/v1/tools/search_site" >"$tmp/search.json" 2>/dev/null \
      && jq -e --arg u "$want_url" '[.results[]?.url] | index($u) != null' "$tmp/search.json" >/dev/null; then
      first_hit="$(date +%s.%N)"
      break
    fi
  fi
  sleep 0.25
done
[ -n "$first_hit" ] || { tail -n 30 "$tmp/daemon.log"; ls -la /var/lib/askwpd /run/askwpd || true; fail "no search hit for $want_url within 150 s, as $WEB_GROUP over $sock"; }
seconds="$(awk -v a="$t0" -v b="$first_hit" 'BEGIN { printf "%.1f", b - a }')"
pass "search_site found $want_url ($(jq '.results | length' "$tmp/search.json") results)"

step "files the daemon made"
# The package owns the dir; the daemon picks these modes. The scheme wants the
# secrets and the socket in the web server's group (0640, 0660) and the SQLite
# files 0600.
for f in /var/lib/askwpd:750 /var/lib/askwpd/token:640 /var/lib/askwpd/webhook.secret:640 $sock:660 /var/lib/askwpd/askwpd.db:600; do
  path=${f%%:*} want=${f##*:}
  got="$(stat -c '%a %U:%G' "$path")"
  if [ "$got" = "$want askwpd:$WEB_GROUP" ]; then
    printf '  %-42s %4s  %-16s %s\n' "$path" "${got%% *}" "${got#* }" ok
  else
    printf '  %-42s %4s  %-16s %s\n' "$path" "${got%% *}" "${got#* }" "want $want askwpd:$WEB_GROUP"
    fail "$path is '$got', want '$want askwpd:$WEB_GROUP'"
  fi
done
ls -la /var/lib/askwpd
pass "the daemon's secrets and socket: the web server's group; its SQLite files: its own"
/usr/bin/askwpd doctor --config /etc/askwpd/askwpd.toml --site-url "$SITE_URL" --state-dir /var/lib/askwpd 2>/dev/null | grep -E '^(ok|FAIL|warn) +(token|webhook)' >"$tmp/doctor-secrets.out" || true
cat "$tmp/doctor-secrets.out"
[ "$(grep -c '^ok' "$tmp/doctor-secrets.out")" = 2 ] || fail "askwpd doctor, as root, does not find both secrets readable by the web server"
pass "askwpd doctor: both secrets readable as the web server's user"

# wp_as_web CODE runs CODE inside the host's WordPress as the web server's user,
# as php-fpm runs the plugin.
wp_as_web() {
  runuser -u "$WEB_GROUP" -- env SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" php -d display_errors=stderr -r '
    $u = parse_url(getenv("SITE_URL"));
    $_SERVER["HTTP_HOST"] = $u["host"] . (isset($u["port"]) ? ":" . $u["port"] : "");
    $_SERVER["REQUEST_URI"] = "/";
    $_SERVER["REQUEST_METHOD"] = "GET";
    define("WP_USE_THEMES", false);
    require rtrim(getenv("WP_ROOT"), "/") . "/wp-load.php";
  '"$1"
}

# The plugin, with nothing configured, as php-fpm runs it: it must find the package's
# socket and read the secrets from the state dir by itself.
ASKWPD_TEST_WP_ENV="$host_env" bash "$(dirname "$host_up")/shim-up.sh" >/dev/null
wp_as_web '
  $s = Askwpd_Settings::get();
  $r = Askwpd_Client::request("GET", "/v1/status");
  printf("%s %s %s %s %d\n", $s["url"], $s["source"]["url"], $s["source"]["token"], $s["source"]["secret"], $r["status"]);
' </dev/null >"$tmp/plugin.out" 2>&1 || true
cat "$tmp/plugin.out"
[ "$(tail -n1 "$tmp/plugin.out")" = "unix:$sock default state_file state_file 200" ] \
  || fail "the plugin, unconfigured, did not reach the daemon on $sock with the secrets of the state dir"
pass "the plugin, unconfigured, found $sock and read both secrets as $WEB_GROUP"

# Publishing through WordPress, as an editor does: the plugin signs the event, the
# daemon indexes the post, and a search through the plugin finds it.
wp_as_web '
  $word = "debpub" . wp_generate_password(8, false, false);
  $id = wp_insert_post(array("post_title" => "Harbour notes $word", "post_content" => "<p>The $word ferry leaves at dawn.</p>", "post_status" => "publish"), true);
  if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message()); exit(1); }
  $sent = Askwpd_Webhooks::flush();
  $found = -1;
  $t0 = microtime(true);
  while (microtime(true) - $t0 < 10) {
    $r = Askwpd_Client::request("POST", "/v1/tools/search_site", json_encode(array("query" => $word, "limit" => 3)), array("Content-Type: application/json"));
    if ($r["status"] === 200 && strpos($r["body"], get_permalink($id)) !== false) { $found = microtime(true) - $t0; break; }
    usleep(100000);
  }
  wp_delete_post($id, true);
  Askwpd_Webhooks::flush();
  printf("event %d, found %s\n", $sent ? $sent[0]["status"] : 0, $found < 0 ? "no" : sprintf("%.2f", $found));
' </dev/null >"$tmp/publish.out" 2>&1 || true
cat "$tmp/publish.out"
grep -q '^event 202, found [0-9]' "$tmp/publish.out" \
  || fail "a post published through WordPress did not become searchable through the plugin"
pass "a post published through WordPress was searchable through the plugin $(sed -n 's/^event 202, found //p' "$tmp/publish.out") s after its event"

kill "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""

step "dpkg -i again (as an upgrade does)"
# The conffile differs from the shipped one only by postinst's wp_root: dpkg must
# keep it without asking, and postinst must see wp_root as already set.
sum_before="$(md5sum </etc/askwpd/askwpd.toml)"
dpkg -i "$deb" </dev/null | tee "$tmp/postinst2.log"
grep -q '^askwpd: wp_root: .*already set' "$tmp/postinst2.log" || fail "postinst did not see wp_root as set"
[ "$(md5sum </etc/askwpd/askwpd.toml)" = "$sum_before" ] || fail "the reinstall changed /etc/askwpd/askwpd.toml"
[ -s /var/lib/askwpd/token ] || fail "the reinstall lost the token"
pass "reinstall kept the config, the token and the index"

remains() {
  local p
  for p in /usr/bin/askwpd /lib/systemd/system/askwpd.service /usr/lib/sysusers.d/askwpd.conf \
    /usr/lib/tmpfiles.d/askwpd.conf /usr/share/doc/askwpd /etc/askwpd /var/lib/askwpd /run/askwpd \
    /etc/systemd/system/askwpd.service.d /etc/tmpfiles.d/askwpd.conf; do
    if [ -e "$p" ]; then printf '  %-42s present\n' "$p"; fi
  done
  if getent passwd askwpd >/dev/null; then
    printf '  %-42s present (%s)\n' "user askwpd" "$(id -nG askwpd)"
  else
    printf '  %-42s absent\n' "user askwpd"
  fi
  printf '  %-42s %s\n' "dpkg status" "$(dpkg-query -W -f='${db:Status-Abbrev}' askwpd 2>/dev/null || echo "not known to dpkg")"
}

step "dpkg -r"
dpkg -r askwpd
echo "what remains:"
remains
for p in /usr/bin/askwpd /lib/systemd/system/askwpd.service; do [ ! -e "$p" ] || fail "$p remains after dpkg -r"; done
for p in /etc/askwpd/askwpd.toml /var/lib/askwpd/token /var/lib/askwpd/askwpd.db; do
  [ -e "$p" ] || fail "dpkg -r removed $p (remove keeps the config and the index)"
done
pass "remove dropped the program and kept the config, the index and the secrets"

step "dpkg -P"
dpkg -P askwpd
echo "what remains:"
remains
for p in /etc/askwpd /var/lib/askwpd /run/askwpd; do [ ! -e "$p" ] || fail "$p remains after dpkg -P"; done
if [ "$user_before" = yes ]; then
  getent passwd askwpd >/dev/null || fail "purge deleted the user askwpd that existed before the package"
  [ "$(id -nG askwpd)" = "$groups_before" ] || fail "askwpd's groups changed: $(id -nG askwpd), were $groups_before"
  pass "purge kept the pre-existing user askwpd and its groups"
fi

step "another machine: no askwpd user, a web group other than www-data"
# /etc becomes an overlay in a private mount namespace, with askwpd deleted and
# wp-config.php replaced by a copy in another group there only: the host's files are
# untouched, and the package sees a machine where it must create the user and
# override the unit's Group=.
upper="$tmp/etc-upper" work="$tmp/etc-work"
mkdir -p "$upper" "$work"
# shellcheck disable=SC2016 # the script expands its own arguments
unshare --mount --propagation private bash -euo pipefail -c '
  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc
  for d in "${@:6}"; do mount --bind "$5" "$d"; done # a host with one site, as above
  if getent passwd askwpd >/dev/null; then userdel askwpd; fi
  if getent group askwpd >/dev/null; then groupdel askwpd; fi
  groupadd --system askwpdweb
  # wp-config.php may live outside /etc: the namespace sees a copy in its place,
  # so the host'"'"'s own file keeps its group.
  cp -p "$4" "$1/../wp-config.php"
  chgrp askwpdweb "$1/../wp-config.php"
  mount --bind "$1/../wp-config.php" "$4"
  bad() { echo "deb-test: FAIL: $*" >&2; exit 1; }
  dpkg -i "$3" | grep "^askwpd: "
  getent passwd askwpd >/dev/null || bad "postinst did not create askwpd"
  [ -f /var/lib/askwpd/.package-created-user ] || bad "no marker for the created user"
  echo "  ok    postinst created askwpd ($(id askwpd)) and marked it"
  [ "$(stat -c "%a %U:%G" /var/lib/askwpd)" = "750 askwpd:askwpdweb" ] || bad "state dir is $(stat -c "%a %U:%G" /var/lib/askwpd)"
  grep -qx Group=askwpdweb /etc/systemd/system/askwpd.service.d/web-group.conf || bad "no Group= drop-in"
  grep -q "^d /var/lib/askwpd 0750 askwpd askwpdweb" /etc/tmpfiles.d/askwpd.conf || bad "no tmpfiles.d override"
  echo "  ok    web group askwpdweb: state dir 750 askwpd:askwpdweb, Group= drop-in, tmpfiles.d override"
  if command -v systemd-analyze >/dev/null; then
    systemd-analyze cat-config tmpfiles.d/askwpd.conf | grep -q askwpdweb || bad "the override does not win"
  fi
  dpkg -P askwpd | grep "^askwpd: "
  if getent passwd askwpd >/dev/null; then bad "purge kept the user it created"; fi
  if getent group askwpd >/dev/null; then bad "purge kept the group askwpd"; fi
  for p in /var/lib/askwpd /etc/askwpd /etc/systemd/system/askwpd.service.d /etc/tmpfiles.d/askwpd.conf; do
    [ ! -e "$p" ] || bad "$p remains after purge"
  done
  echo "  ok    purge deleted the user and group it created, and the overrides"
' overlay "$upper" "$work" "$deb" "$WP_CONFIG_FILE" "$tmp/empty" "${others[@]}" || fail "the created-user path"
getent passwd askwpd >/dev/null || [ "$user_before" = no ] || fail "the host's user askwpd is gone"
[ "$(stat -c %G "$WP_CONFIG_FILE")" = "$wp_config_group" ] || fail "$WP_CONFIG_FILE changed group"
pass "the host's user askwpd is still there: $(id askwpd 2>/dev/null || echo none)"

step "a Debian-packaged WordPress: /usr/share/wordpress with /etc/wordpress/config-*.php"
# With the host's own trees hidden in a private mount namespace, what is left is
# Debian's wordpress package (6.1), given a site config of the shape Debian's
# README.Debian describes, root's as there: the group then comes from the php-fpm
# pool. The host's user exists, so purge keeps it. /etc/wordpress is the namespace's
# own: the machine's is left as it is.
empty="$tmp/empty" etcwp="$tmp/etc-wordpress"
mkdir -p "$empty" "$etcwp"
if [ ! -f /usr/share/wordpress/wp-config.php ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wordpress >/dev/null \
    || fail "could not install Debian's wordpress package"
fi
cp -a /etc/wordpress/. "$etcwp/" 2>/dev/null || true
cat >"$etcwp/config-debtest.example.php" <<'PHP'
<?php
define('DB_NAME', 'wordpress');
define('DB_USER', 'wordpress');
define('DB_PASSWORD', 'unused');
define('DB_HOST', '127.0.0.1');
PHP
# shellcheck disable=SC2016 # the script expands its own arguments
unshare --mount --propagation private bash -euo pipefail -c '
  for d in /var/www /srv/www; do [ ! -d "$d" ] || mount --bind "$1" "$d"; done
  mkdir -p /etc/wordpress && mount --bind "$3" /etc/wordpress
  bad() { echo "deb-test: FAIL: $*" >&2; exit 1; }
  dpkg -i "$2" | grep "^askwpd: "
  grep -qx "wp_root = \"/usr/share/wordpress\"" /etc/askwpd/askwpd.toml || bad "wp_root is not /usr/share/wordpress"
  echo "  ok    wp_root = \"/usr/share/wordpress\""
  dpkg -P askwpd | grep "^askwpd: "
' debian "$empty" "$deb" "$etcwp" || fail "the Debian-packaged WordPress path"

step "result"
echo "seconds from dpkg -i to the first searchable page: $seconds"
echo "package size: $deb_bytes bytes ($(awk -v b="$deb_bytes" 'BEGIN { printf "%.1f", b / 1e6 }') MB), installed size $installed_kib KiB"
echo "deb-test: ok"

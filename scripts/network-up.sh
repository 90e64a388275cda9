#!/usr/bin/env bash
# Brings up the test WordPress network beside the single sites: WordPress 7.1
# (ASKWPD_WP_VERSION=6.1: Debian's) in a tree of its own, served by nginx and php-fpm
# (PHP as www-data) on a free port of its own, its own database and user, converted to
# a subdirectory network with these sites:
#   1 /            the main site
#   2 /site2/      subdirectory
#   3 /site3/      subdirectory
#   4 askwpd-mapped.test:PORT /   a mapped domain (an /etc/hosts name for 127.0.0.1)
#   5 /optout/     opted out of askwpd through the shim's site option
# each with public and private marker posts (scripts/wp/network.php), and the shim
# (wp-plugin-shim/) network-activated. Runs as root for
# setup only. Idempotent. The single-site test sites are left alone.
#
# Usage: scripts/network-up.sh [--quiet]
# State: .wp-network/ at the repo root; env in .wp-network/env (the keys of .wp-test/env,
# plus WP_MAPPED_HOST and WP_NETWORK_MANIFEST, the JSON list of sites and markers).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

export ASKWPD_WP_SERVER=nginx
export ASKWPD_WP_STATE="${ASKWPD_NETWORK_STATE:-$root/.wp-network}"
export ASKWPD_SITE_NAME=net
export ASKWPD_WP_CONFIG_HOST=127.0.0.1
export ASKWPD_WP_PORT="${ASKWPD_NETWORK_PORT:-8093}"
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

QUIET=0
[[ "${1:-}" == --quiet || "${1:-}" == -q ]] && QUIET=1
[[ "$(id -u)" == 0 ]] || die "run as root (it installs packages and starts nginx)"
MAPPED_HOST=askwpd-mapped.test
T0=$SECONDS
take_lock
mkdir -p "$STATE_DIR"
chmod 0700 "$STATE_DIR"

ensure_packages php-cli php-mysql php-xml php-mbstring php-curl php-intl curl mariadb-client nginx php-fpm
ensure_wp_tree

# The mapped domain's name: loopback, as a host's DNS would point it at this server.
grep -qE "^127\.0\.0\.1[[:space:]]+$MAPPED_HOST\$" /etc/hosts || printf '127.0.0.1 %s\n' "$MAPPED_HOST" >>/etc/hosts

nginx_is_ours() { host_server_up "$1"; }
PORT="$(choose_port nginx_is_ours)"
SITE_URL="http://$WP_CONFIG_HOST:$PORT"

DB_PASSWORD="$(config_db_password)"
if [[ -z "$DB_PASSWORD" && -s "$STATE_DIR/db-password" ]]; then DB_PASSWORD="$(cat "$STATE_DIR/db-password")"; fi
[[ -n "$DB_PASSWORD" ]] || DB_PASSWORD="$(gen_secret)"
(umask 077 && printf '%s\n' "$DB_PASSWORD" >"$STATE_DIR/db-password")
if ! db_user_probe "$DB_PASSWORD" >/dev/null; then
  ensure_mariadb
  create_db_and_user "$DB_PASSWORD"
fi
# The network's domains carry its port: when the port it had was taken by something
# else meanwhile, the network is built again on the new one.
if [[ -s "$STATE_DIR/server.port" && "$(cat "$STATE_DIR/server.port")" != "$PORT" ]]; then
  log "port $(cat "$STATE_DIR/server.port") is taken: building the network again on $PORT"
  detect_db_root || ensure_mariadb
  db_root -e "DROP DATABASE IF EXISTS \`$WP_DB_NAME\`; CREATE DATABASE \`$WP_DB_NAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;"
fi
if [[ -s "$STATE_DIR/admin-password" ]]; then
  ADMIN_PASSWORD="$(cat "$STATE_DIR/admin-password")"
else
  ADMIN_PASSWORD="$(gen_secret)"
  (umask 077 && printf '%s\n' "$ADMIN_PASSWORD" >"$STATE_DIR/admin-password")
fi

# The shim, network-activated by network.php, and the must-use plugin through which a
# test points it at the daemon it runs.
plugins="$WP_CONTENT_DIR/plugins"
install -d -m 0755 "$plugins"
[[ "$(readlink "$plugins/askwpd-companion" 2>/dev/null)" == "$root/wp-plugin-shim" ]] \
  || ln -sfn "$root/wp-plugin-shim" "$plugins/askwpd-companion"
mu="$WP_CONTENT_DIR/mu-plugins/askwpd-network-test.php"
install -d -m 0755 "$(dirname "$mu")"
sed "s#@CONFIG_FILE@#$STATE_DIR/shim.json#" "$ASKWPD_WP_PHP_DIR/mu-network-shim.php" >"$mu.tmp"
if cmp -s "$mu.tmp" "$mu"; then rm -f "$mu.tmp"; else mv -f "$mu.tmp" "$mu"; chmod 0644 "$mu"; fi

config_is_ours || die "$WP_CONFIG_FILE exists and was not written by this script; move it away first"
network_tables() {
  MYSQL_PWD="$DB_PASSWORD" mariadb --protocol=tcp -h127.0.0.1 -P"$WP_DB_PORT" -u"$WP_DB_USER" "$WP_DB_NAME" -Nse \
    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '${WP_TABLE_PREFIX}blogs'" </dev/null
}
# The config lib.sh writes, with the network's constants before wp-settings.php once the
# network's tables exist (WordPress cannot boot as a network without them).
write_network_config() {
  local tmp
  tmp="$(mktemp "$WP_CONFIG_FILE.XXXXXX")"
  if [[ "$(network_tables)" == 1 ]]; then
    render_wp_config "$DB_PASSWORD" | awk -v port="$PORT" -v host="$WP_CONFIG_HOST" '
      /^if \( ! defined\( .ABSPATH. \) \)/ && !done {
        print "define( '\''WP_ALLOW_MULTISITE'\'', true );"
        print "define( '\''MULTISITE'\'', true );"
        print "define( '\''SUBDOMAIN_INSTALL'\'', false );"
        print "define( '\''DOMAIN_CURRENT_SITE'\'', '\''" host ":" port "'\'' );"
        print "define( '\''PATH_CURRENT_SITE'\'', '\''/'\'' );"
        print "define( '\''SITE_ID_CURRENT_SITE'\'', 1 );"
        print "define( '\''BLOG_ID_CURRENT_SITE'\'', 1 );"
        print ""
        done = 1
      }
      { print }' >"$tmp"
  else
    render_wp_config "$DB_PASSWORD" >"$tmp"
  fi
  chgrp "$WEB_USER" "$tmp"
  chmod 0640 "$tmp"
  if cmp -s "$tmp" "$WP_CONFIG_FILE"; then rm -f "$tmp"; return 0; fi
  mv -f "$tmp" "$WP_CONFIG_FILE"
  log "wrote $WP_CONFIG_FILE"
}
run_php() {
  WP_ROOT="$WP_ROOT" ASKWPD_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
    php -d display_errors=stderr -d memory_limit=512M "$ASKWPD_WP_PHP_DIR/network.php" "$@" </dev/null
}
write_network_config
if [[ "$(network_tables)" != 1 ]]; then
  run_php --url="$SITE_URL" install || die "network.php install failed"
  write_network_config
fi
[[ "$(network_tables)" == 1 ]] || die "the network's tables were not created"
run_php --url="$SITE_URL" --mapped="$MAPPED_HOST:$PORT" --manifest="$STATE_DIR/sites.json" sites \
  || die "network.php sites failed"

ensure_host_server "$PORT"
SERVER_PID="$(cat "$(host_run_dir "$PORT")/nginx.pid")"
echo "$SERVER_PID" >"$STATE_DIR/server.pid"
echo "$PORT" >"$STATE_DIR/server.port"

env_text="WP_ROOT=$WP_ROOT
WP_CONTENT_DIR=$WP_CONTENT_DIR
WP_CONFIG_FILE=$WP_CONFIG_FILE
SITE_URL=$SITE_URL
WP_PORT=$PORT
WP_PID=$SERVER_PID
WP_DB_NAME=$WP_DB_NAME
WP_DB_USER=$WP_DB_USER
WP_DB_PASSWORD=$DB_PASSWORD
WP_DB_HOST=$WP_DB_HOST
WP_DB_PORT=$WP_DB_PORT
WP_TABLE_PREFIX=$WP_TABLE_PREFIX
WP_ADMIN_USER=$WP_ADMIN_USER
WP_ADMIN_PASSWORD=$ADMIN_PASSWORD
WP_STATE_DIR=$STATE_DIR
WP_MAPPED_HOST=$MAPPED_HOST:$PORT
WP_NETWORK_MANIFEST=$STATE_DIR/sites.json"
[[ -f "$STATE_DIR/env" && "$(cat "$STATE_DIR/env")" == "$env_text" ]] \
  || (umask 077 && printf '%s\n' "$env_text" >"$STATE_DIR/env.tmp" && mv -f "$STATE_DIR/env.tmp" "$STATE_DIR/env")

# Each site answers at its own address, its marker on its own home page's post.
for url in "$SITE_URL/" "$SITE_URL/site2/" "$SITE_URL/site3/" "http://$MAPPED_HOST:$PORT/"; do
  code="$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "$url" || echo 000)"
  [[ "$code" == 200 ]] || die "GET $url returned $code (see $(host_run_dir "$PORT")/php-error.log)"
done
log "the network is up at $SITE_URL (took $((SECONDS - T0)) s)"
((QUIET)) || printf '%s\n' "$env_text"

#!/usr/bin/env bash
# Brings up a big WordPress for scale runs, apart from every test site: WordPress 7.1
# (ASKWPD_WP_VERSION=6.1: Debian's) in a tree of its own, its own database and user,
# served by nginx and php-fpm (PHP as www-data, opcache on) on a free port of its own,
# and N published posts made through WordPress's own API (scripts/wp/bigsite-gen.php), their
# text drawn from the shared BEIR corpora when present. Idempotent: a re-run adds only the
# posts missing up to N. Runs as root for setup only.
#
# Usage: scripts/bigsite-up.sh N [--down]
#   N       posts to have (1000, 10000, 100000 for the cost curve)
#   --down  stop its nginx and php-fpm (the database and tree stay)
# State: .wp-big/ at the repo root; env in .wp-big/env (the keys of .wp-test/env).
# Port: the first free one from ASKWPD_BIG_PORT (default 8097).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

export ASKWPD_WP_SERVER=nginx
export ASKWPD_WP_STATE="$root/.wp-big"
export ASKWPD_SITE_NAME=big
export ASKWPD_WP_CONFIG_HOST=127.0.0.1
export ASKWPD_WP_PORT="${ASKWPD_BIG_PORT:-8097}"
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

usage() { sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
N="${1:-}"
if [[ "$N" == --down ]]; then
  [[ -s "$STATE_DIR/server.port" ]] && stop_host_server "$(cat "$STATE_DIR/server.port")"
  exit 0
fi
[[ "$N" =~ ^[0-9]+$ ]] || { usage >&2; die "N, the number of posts, is required"; }
[[ "$(id -u)" == 0 ]] || die "run as root (it installs packages and starts nginx)"
T0=$SECONDS
take_lock
mkdir -p "$STATE_DIR"
chmod 0700 "$STATE_DIR"

ensure_packages php-cli php-mysql php-xml php-mbstring php-curl php-intl curl mariadb-client nginx php-fpm
ensure_wp_tree
nginx_is_ours() { host_server_up "$1"; }
PORT="$(choose_port nginx_is_ours)"
SITE_URL="http://$WP_CONFIG_HOST:$PORT"

DB_PASSWORD="$(config_db_password)"
if [[ -z "$DB_PASSWORD" && -s "$STATE_DIR/db-password" ]]; then DB_PASSWORD="$(cat "$STATE_DIR/db-password")"; fi
[[ -n "$DB_PASSWORD" ]] || DB_PASSWORD="$(gen_secret)"
(umask 077 && printf '%s\n' "$DB_PASSWORD" >"$STATE_DIR/db-password")
if ! WP_TABLES="$(db_user_probe "$DB_PASSWORD")"; then
  ensure_mariadb
  create_db_and_user "$DB_PASSWORD"
  WP_TABLES="$(db_user_probe "$DB_PASSWORD")"
fi
if [[ -s "$STATE_DIR/admin-password" ]]; then
  ADMIN_PASSWORD="$(cat "$STATE_DIR/admin-password")"
else
  ADMIN_PASSWORD="$(gen_secret)"
  (umask 077 && printf '%s\n' "$ADMIN_PASSWORD" >"$STATE_DIR/admin-password")
fi
config_is_ours || die "$WP_CONFIG_FILE exists and was not written by this script; move it away first"
write_wp_config "$DB_PASSWORD"

run_php() { # script args...
  WP_ROOT="$WP_ROOT" ASKWPD_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
    php -d display_errors=stderr -d memory_limit=1024M "$ASKWPD_WP_PHP_DIR/$1" "${@:2}" </dev/null
}
fresh=(); [[ "$WP_TABLES" == 1 ]] || fresh=(--fresh)
run_php install.php --url="$SITE_URL" --title="Askwpd Big" --admin-user="$WP_ADMIN_USER" \
  --admin-email="$WP_ADMIN_EMAIL" --theme="$WP_THEME" "${fresh[@]}" || die "install.php failed"
shared="$root/../shared/evaldata"
[[ -d "$shared" ]] || shared=/work/shared/evaldata
run_php bigsite-gen.php --url="$SITE_URL" --count="$N" \
  --corpus="$shared/beir-scifact/corpus.jsonl" --corpus="$shared/wpdocs/corpus.jsonl" || die "bigsite-gen.php failed"

ensure_host_server "$PORT"
SERVER_PID="$(cat "$(host_run_dir "$PORT")/nginx.pid")"
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
WP_STATE_DIR=$STATE_DIR"
[[ -f "$STATE_DIR/env" && "$(cat "$STATE_DIR/env")" == "$env_text" ]] \
  || (umask 077 && printf '%s\n' "$env_text" >"$STATE_DIR/env.tmp" && mv -f "$STATE_DIR/env.tmp" "$STATE_DIR/env")

for url in "$SITE_URL/" "$SITE_URL/wp-sitemap.xml"; do
  code="$(curl -sS --max-time 60 -o /dev/null -w '%{http_code}' "$url" || echo 000)"
  [[ "$code" == 200 ]] || die "GET $url returned $code (see $(host_run_dir "$PORT")/php-error.log)"
done
log "the big site is up at $SITE_URL with $N generated posts (took $((SECONDS - T0)) s)"

#!/usr/bin/env bash
# Brings up a real WordPress for tests and the demo: WordPress 7.1 from
# ../shared/wordpress (ASKWPD_WP_VERSION=6.1: Debian 12's package) in a tree of its own,
# a MariaDB database and user, `php -S` on a free loopback port (ASKWPD_WP_SERVER=nginx:
# nginx and php-fpm, PHP as www-data), a browserless install with Twenty Twenty-Five
# (Twenty Twenty-Three on 6.1) and seeded content. Idempotent; a re-run when everything
# is up only checks it.
#
# Usage: scripts/wp-up.sh [--wxr[=FILE]] [--generate N] [--remove-generated] [--port N] [--quiet]
#   --wxr[=FILE]        also import a WXR file (default: the theme unit test data in
#                       ../shared/evaldata/wp-theme-unit-test/); env ASKWPD_WXR=1, ASKWPD_WXR_FILE
#   --generate N        ensure exactly N generated posts exist; env ASKWPD_GEN_POSTS=N
#   --remove-generated  delete all generated posts
#   --port N            the first port tried (default 8089); env ASKWPD_WP_PORT
#   --quiet             do not print the env lines at the end
# State: .wp-test/ at the repo root (env, server.log, server.pid, seed.json, secrets),
# or $ASKWPD_WP_STATE. The tree is /srv/www/askwpd-INSTANCE-NAME and the database
# askwpd_INSTANCE_NAME, where INSTANCE is a hash of the checkout's path (ASKWPD_INSTANCE)
# and NAME is ASKWPD_SITE_NAME (test), so two checkouts never share a site.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() { sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

WXR=0
WXR_FILE="${ASKWPD_WXR_FILE:-}"
GEN="${ASKWPD_GEN_POSTS:-}"
REMOVE_GEN=0
QUIET=0
case "${ASKWPD_WXR:-0}" in 1|true|yes) WXR=1 ;; esac
while (($#)); do
  case "$1" in
    --wxr) WXR=1 ;;
    --wxr=*) WXR=1; WXR_FILE="${1#--wxr=}" ;;
    --generate) (($# >= 2)) || die "--generate needs a number"; GEN="$2"; shift ;;
    --generate=*) GEN="${1#--generate=}" ;;
    --remove-generated) REMOVE_GEN=1 ;;
    --port) (($# >= 2)) || die "--port needs a number"; WP_PREFERRED_PORT="$2"; shift ;;
    --port=*) WP_PREFERRED_PORT="${1#--port=}" ;;
    --quiet|-q) QUIET=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
[[ -z "$GEN" || "$GEN" =~ ^[0-9]+$ ]] || die "--generate wants a number, got '$GEN'"
[[ "$WP_PREFERRED_PORT" =~ ^[0-9]+$ ]] || die "--port wants a number, got '$WP_PREFERRED_PORT'"
[[ -z "$WXR_FILE" ]] && WXR_FILE="$ASKWPD_REPO_ROOT/../shared/evaldata/wp-theme-unit-test/themeunittestdata.wordpress.xml"

[[ "$(id -u)" == 0 ]] || die "run as root (it installs packages and writes /etc/wordpress)"

T0=$SECONDS
take_lock
mkdir -p "$STATE_DIR"
chmod 0700 "$STATE_DIR"

# --- 1. packages and the tree ------------------------------------------------
ensure_packages php-cli php-mysql php-xml php-mbstring php-curl php-gd php-intl php-zip curl mariadb-client
[[ "$WP_SERVER" == php || "$WP_SERVER" == nginx ]] || die "ASKWPD_WP_SERVER is php or nginx, not '$WP_SERVER'"
[[ "$WP_SERVER" == nginx ]] && ensure_packages nginx php-fpm
ensure_wp_tree

# --- 2. MariaDB, database, user --------------------------------------------
# The password lives in the config file (machine-wide truth) and in the state dir.
DB_PASSWORD="$(config_db_password)"
if [[ -z "$DB_PASSWORD" && -s "$STATE_DIR/db-password" ]]; then DB_PASSWORD="$(cat "$STATE_DIR/db-password")"; fi
[[ -n "$DB_PASSWORD" ]] || DB_PASSWORD="$(gen_secret)"
[[ -f "$STATE_DIR/db-password" && "$(cat "$STATE_DIR/db-password")" == "$DB_PASSWORD" ]] \
  || (umask 077 && printf '%s\n' "$DB_PASSWORD" >"$STATE_DIR/db-password")
if ! WP_TABLES="$(db_user_probe "$DB_PASSWORD")"; then
  ensure_mariadb
  create_db_and_user "$DB_PASSWORD"
  WP_TABLES="$(db_user_probe "$DB_PASSWORD")"
fi

# --- 3. WordPress config and theme ------------------------------------------
config_is_ours || die "$WP_CONFIG_FILE exists and was not written by this script; move it away first"
write_wp_config "$DB_PASSWORD"

# The seed's members-only page relies on this must-use plugin for its login wall.
MU_SRC="$ASKWPD_WP_PHP_DIR/mu-members-only.php"
MU_DST="$WP_CONTENT_DIR/mu-plugins/askwpd-members-only.php"
if ! cmp -s "$MU_SRC" "$MU_DST"; then
  install -D -m 0644 "$MU_SRC" "$MU_DST"
  log "installed $MU_DST"
fi

# --- 4. php -S ---------------------------------------------------------------
ROUTER="$ASKWPD_WP_PHP_DIR/router.php"

ping_is_ours() { # PORT -> prints the server pid when the server on PORT is ours
  local ans tag router state pid
  ans="$(server_ping "$1")"
  read -r tag router state pid _ <<<"$ans" || true
  if [[ "${tag:-}" == askwpd-wp-ok && "${router:-}" == "$ROUTER" && "${state:-}" == "$STATE_DIR" ]] && pid_is_our_server "${pid:-}"; then
    echo "$pid"
  fi
}


nginx_is_ours() { host_server_up "$1"; }
php_is_ours() { [[ -n "$(ping_is_ours "$1")" ]]; }

PORT=""
SERVER_PID=""
if [[ "$WP_SERVER" == nginx ]]; then
  PORT="$(choose_port nginx_is_ours)"
  ensure_host_server "$PORT"
  SERVER_PID="$(cat "$(host_run_dir "$PORT")/nginx.pid")"
  echo "$SERVER_PID" >"$STATE_DIR/server.pid"
  echo "$PORT" >"$STATE_DIR/server.port"
elif [[ -s "$STATE_DIR/server.port" ]]; then
  p="$(cat "$STATE_DIR/server.port")"
  pid="$(ping_is_ours "$p")"
  if [[ -n "$pid" ]]; then PORT="$p"; SERVER_PID="$pid"; fi
fi
if [[ -z "$PORT" ]]; then
  # A server of ours from an earlier run that is no longer answering: stop it.
  stop_server
  for ((try = 0; try < 5; try++)); do
    p="$(choose_port php_is_ours)"
    pid="$(ping_is_ours "$p")"  # our server, pid file lost: adopt it
    if [[ -n "$pid" ]]; then PORT="$p"; SERVER_PID="$pid"; break; fi
    log "starting php -S 127.0.0.1:$p"
    : >"$STATE_DIR/server.log"
    # setsid: own process group, so wp-down.sh can stop the master and its workers.
    # exec keeps the pid, which the router reports in its ping answer.
    # -q drops the per-request lines; PHP errors still go to the log through error_log
    # (ASKWPD_WP_ACCESS_LOG=1 keeps the request lines).
    quiet=(-q); [[ "${ASKWPD_WP_ACCESS_LOG:-0}" == 1 ]] && quiet=()
    setsid bash -c 'export ASKWPD_WP_SERVER_PID=$$; exec "$@"' askwpd-wp \
      env PHP_CLI_SERVER_WORKERS=4 ASKWPD_WP_STATE_DIR="$STATE_DIR" ASKWPD_WP_CONTENT_DIR="$WP_CONTENT_DIR" \
      php "${quiet[@]}" -d log_errors=1 -d error_log="$STATE_DIR/server.log" \
      -S "127.0.0.1:$p" -t "$WP_ROOT" "$ROUTER" \
      >>"$STATE_DIR/server.log" 2>&1 </dev/null 9>&- &
    started=$!
    for ((i = 0; i < 100; i++)); do
      pid_alive "$started" || break
      [[ -n "$(ping_is_ours "$p")" ]] && break
      sleep 0.1
    done
    if [[ -n "$(ping_is_ours "$p")" ]]; then PORT="$p"; SERVER_PID="$started"; break; fi
    # Taken meanwhile by someone else, or PHP failed: the next free port.
    log "php -S on port $p did not come up; log:"; tail -n 5 "$STATE_DIR/server.log" >&2 || true
    stop_server "$started"
    rm -f "$STATE_DIR/server.port"
  done
  [[ -n "$PORT" ]] || die "could not start php -S (see $STATE_DIR/server.log)"
  echo "$SERVER_PID" >"$STATE_DIR/server.pid"
  echo "$PORT" >"$STATE_DIR/server.port"
fi
[[ -f "$STATE_DIR/server.pid" && "$(cat "$STATE_DIR/server.pid")" == "$SERVER_PID" ]] || echo "$SERVER_PID" >"$STATE_DIR/server.pid"
SITE_URL="http://$WP_CONFIG_HOST:$PORT"

# --- 5. install, options, seed ----------------------------------------------
if [[ -s "$STATE_DIR/admin-password" ]]; then
  ADMIN_PASSWORD="$(cat "$STATE_DIR/admin-password")"
else
  ADMIN_PASSWORD="$(gen_secret)"
  (umask 077 && printf '%s\n' "$ADMIN_PASSWORD" >"$STATE_DIR/admin-password")
fi

run_php() { # script args... ; WordPress code is loaded from CLI with HTTP_HOST set by the script
  WP_ROOT="$WP_ROOT" SITE_URL="$SITE_URL" ASKWPD_ADMIN_PASSWORD="$ADMIN_PASSWORD" \
    php -d display_errors=stderr -d memory_limit=1024M \
    "$ASKWPD_WP_PHP_DIR/$1" "${@:2}" </dev/null
}

# Content changes on request: wait for tests that compare the index with the site.
if ((WXR || REMOVE_GEN)) || [[ -n "$GEN" ]]; then take_test_lock; fi

# (install.php reads the admin password from ASKWPD_ADMIN_PASSWORD, not from argv.)
INSTALL_ARGS=(--url="$SITE_URL" --title="$WP_SITE_TITLE" --admin-user="$WP_ADMIN_USER"
  --admin-email="$WP_ADMIN_EMAIL" --theme="$WP_THEME")
# What the PHP step depends on besides the database: the scripts and their arguments.
INPUTS="$(cat "$ASKWPD_WP_PHP_DIR/install.php" "$ASKWPD_WP_PHP_DIR/seed.php" | md5sum | cut -d' ' -f1)"
INPUTS="$INPUTS $(printf '%s\n' "${INSTALL_ARGS[@]}" "$ADMIN_PASSWORD" "$STATE_DIR" | md5sum | cut -d' ' -f1)"
SEED_OUT=""
FP=""
[[ "$WP_TABLES" == 1 && -s "$STATE_DIR/seed.json" && -s "$STATE_DIR/seed.stamp" ]] && FP="$(db_seed_fingerprint "$DB_PASSWORD")"
if [[ -n "$FP" && "$(sed -n 1p "$STATE_DIR/seed.stamp")" == "$INPUTS $FP" ]]; then
  SEED_OUT="$(sed -n '2,$p' "$STATE_DIR/seed.stamp")"  # nothing changed since the last run
  SEED_SKIPPED=1
elif [[ "$WP_TABLES" == 1 ]]; then
  # The seed may change content (a new seeded item): not under a test that compares the site.
  ((WXR || REMOVE_GEN)) || [[ -n "$GEN" ]] || take_test_lock  # (held already for those)
  # Installed: one PHP process converges the options and runs seed.php.
  SEED_OUT="$(run_php install.php "${INSTALL_ARGS[@]}" --seed --manifest="$STATE_DIR/seed.json")" \
    || die "install.php --seed failed"
  # Tables but no finished install (WordPress then exits quietly): install below.
  [[ "$SEED_OUT" == *VERIFY_URL=* ]] || { log "WordPress tables exist but the site is not installed"; WP_TABLES=0; }
fi
if [[ "$WP_TABLES" != 1 ]]; then
  rm -f "$STATE_DIR/seed.stamp"
  run_php install.php "${INSTALL_ARGS[@]}" --fresh || die "install.php failed"
  SEED_OUT="$(run_php seed.php --url="$SITE_URL" --manifest="$STATE_DIR/seed.json")" || die "seed.php failed"
fi
VERIFY_URL="$(sed -n 's/^VERIFY_URL=//p' <<<"$SEED_OUT")"
VERIFY_TEXT="$(sed -n 's/^VERIFY_TEXT=//p' <<<"$SEED_OUT")"

if ((WXR || REMOVE_GEN)) || [[ -n "$GEN" ]]; then SEED_SKIPPED=0; fi
if ((WXR)); then
  if [[ -f "$WXR_FILE" ]]; then
    run_php wxr-import.php --url="$SITE_URL" --file="$WXR_FILE" || die "wxr-import.php failed"
  else
    log "note: WXR file $WXR_FILE not found; skipping the import"
  fi
fi
if ((REMOVE_GEN)); then
  run_php gen-posts.php --url="$SITE_URL" --remove || die "gen-posts.php --remove failed"
fi
if [[ -n "$GEN" ]]; then
  run_php gen-posts.php --url="$SITE_URL" --count="$GEN" || die "gen-posts.php failed"
fi

((${SEED_SKIPPED:-0})) || FP="$(db_seed_fingerprint "$DB_PASSWORD")"
STAMP="$INPUTS $FP
VERIFY_URL=$VERIFY_URL
VERIFY_TEXT=$VERIFY_TEXT"
[[ -f "$STATE_DIR/seed.stamp" && "$(cat "$STATE_DIR/seed.stamp")" == "$STAMP" ]] \
  || printf '%s\n' "$STAMP" >"$STATE_DIR/seed.stamp"

# --- 6. state env --------------------------------------------------------------
env_line() { # KEY VALUE -> shell-sourceable line; values here are plain, quote just in case
  if [[ "$2" =~ ^[A-Za-z0-9_./:@+,=-]*$ ]]; then printf '%s=%s\n' "$1" "$2"; else printf '%s=%q\n' "$1" "$2"; fi
}
ENV_TEXT="$(
  env_line WP_ROOT "$WP_ROOT"
  env_line WP_CONTENT_DIR "$WP_CONTENT_DIR"
  env_line WP_CONFIG_FILE "$WP_CONFIG_FILE"
  env_line SITE_URL "$SITE_URL"
  env_line WP_PORT "$PORT"
  env_line WP_PID "$SERVER_PID"
  env_line WP_DB_NAME "$WP_DB_NAME"
  env_line WP_DB_USER "$WP_DB_USER"
  env_line WP_DB_PASSWORD "$DB_PASSWORD"
  env_line WP_DB_HOST "$WP_DB_HOST"
  env_line WP_DB_PORT "$WP_DB_PORT"
  env_line WP_TABLE_PREFIX "$WP_TABLE_PREFIX"
  env_line WP_ADMIN_USER "$WP_ADMIN_USER"
  env_line WP_ADMIN_PASSWORD "$ADMIN_PASSWORD"
  env_line WP_STATE_DIR "$STATE_DIR"
  env_line WP_SEED_MANIFEST "$STATE_DIR/seed.json"
)"
if [[ ! -f "$STATE_DIR/env" ]] || [[ "$(cat "$STATE_DIR/env")" != "$ENV_TEXT" ]]; then
  (umask 077 && printf '%s\n' "$ENV_TEXT" >"$STATE_DIR/env.tmp" && mv -f "$STATE_DIR/env.tmp" "$STATE_DIR/env")
fi

# --- 7. verify -------------------------------------------------------------------
fetch() { # URL OUTFILE -> prints the HTTP status
  curl -sS --max-time 20 -o "$2" -w '%{http_code}' "$1" || echo 000
}
TMPD="$(mktemp -d)"
trap 'rm -rf "$TMPD"' EXIT
[[ -n "$VERIFY_URL" && -n "$VERIFY_TEXT" ]] || die "seed.php did not name a post to check"
[[ "$VERIFY_URL" == "$SITE_URL"/*/*/*/*/ ]] || die "seeded post URL $VERIFY_URL is not a pretty permalink"
# The three fetches in parallel (the server has 4 workers).
# Wait for these three only: a bare `wait` would also wait for a php server started above.
fetch "$SITE_URL/" "$TMPD/home" >"$TMPD/home.code" & f1=$!
fetch "$SITE_URL/wp-sitemap.xml" "$TMPD/sitemap" >"$TMPD/sitemap.code" & f2=$!
fetch "$VERIFY_URL" "$TMPD/post" >"$TMPD/post.code" & f3=$!
wait "$f1" "$f2" "$f3"
code="$(cat "$TMPD/home.code")"
[[ "$code" == 200 ]] || die "GET $SITE_URL/ returned $code (see $STATE_DIR/server.log)"
grep -qF "$WP_SITE_TITLE" "$TMPD/home" || die "GET $SITE_URL/ does not show the site title '$WP_SITE_TITLE'"
code="$(cat "$TMPD/sitemap.code")"
[[ "$code" == 200 ]] || die "GET $SITE_URL/wp-sitemap.xml returned $code"
grep -q '<sitemapindex' "$TMPD/sitemap" || die "$SITE_URL/wp-sitemap.xml is not a sitemap index"
code="$(cat "$TMPD/post.code")"
[[ "$code" == 200 ]] || die "GET $VERIFY_URL returned $code"
grep -qF "$VERIFY_TEXT" "$TMPD/post" || die "GET $VERIFY_URL does not show the post title ($VERIFY_TEXT)"

log "WordPress is up at $SITE_URL (took $((SECONDS - T0)) s)"
((QUIET)) || printf '%s\n' "$ENV_TEXT"

#!/usr/bin/env bash
# Stops the web server started by scripts/wp-up.sh (php -S, or nginx and php-fpm). Idempotent.
#
# Usage: scripts/wp-down.sh [--purge]
#   --purge  also drops the database and its user, removes the site's tree (only if
#            wp-up.sh made it) and empties the state dir (.wp-test/ or $ASKWPD_WP_STATE).
# MariaDB itself, the unpacked releases and the Debian packages stay. The same variables as
# wp-up.sh name the site (ASKWPD_WP_STATE, ASKWPD_SITE_NAME, ...).
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

PURGE=0
while (($#)); do
  case "$1" in
    --purge) PURGE=1 ;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done

take_lock

if [[ -d "$STATE_DIR" ]]; then
  take_test_lock
  stop_server
  [[ -s "$STATE_DIR/server.port" ]] && stop_host_server "$(cat "$STATE_DIR/server.port")"
  # A server of ours whose pid file was lost still answers the ping on its port.
  if [[ -s "$STATE_DIR/server.port" ]]; then
    read -r tag router state pid _ <<<"$(server_ping "$(cat "$STATE_DIR/server.port")")" || true
    if [[ "${tag:-}" == askwpd-wp-ok && "${router:-}" == "$ASKWPD_WP_PHP_DIR/router.php" && "${state:-}" == "$STATE_DIR" ]]; then
      stop_server "$pid"
    fi
  fi
  rm -f "$STATE_DIR/env"
  log "web server stopped"
else
  log "no state dir $STATE_DIR: nothing running"
fi

if ((PURGE)); then
  if detect_db_root; then
    log "dropping database $WP_DB_NAME and user $WP_DB_USER"
    db_root -e "DROP DATABASE IF EXISTS \`$WP_DB_NAME\`;
      DROP USER IF EXISTS '$WP_DB_USER'@'localhost';
      DROP USER IF EXISTS '$WP_DB_USER'@'127.0.0.1';
      FLUSH PRIVILEGES;"
  else
    log "MariaDB does not answer as root: database and user left alone"
  fi
  if [[ -f "$WP_ROOT/.askwpd-tree" ]]; then
    rm -rf "${WP_ROOT:?}"
    log "removed $WP_ROOT"
  elif [[ -e "$WP_ROOT" ]]; then
    log "$WP_ROOT was not made by wp-up.sh: left alone"
  fi
  if [[ -d "$STATE_DIR" ]]; then
    # test.lock stays: tests may be waiting on it.
    find "${STATE_DIR:?}" -mindepth 1 -maxdepth 1 ! -name test.lock -exec rm -rf {} +
    log "emptied $STATE_DIR"
  fi
fi

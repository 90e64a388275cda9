#!/usr/bin/env bash
# Brings up the production-shaped test host beside the fast one: the same Debian
# WordPress, but served by nginx and php-fpm from Debian's packages with PHP running as
# www-data, under its own host name (localhost), database and state dir; and an
# unprivileged system user `askwpd` in the web server's group, as a site runs the daemon.
# The end-to-end suites run askwpd as that user and PHP as www-data; only this setup
# runs as root. Idempotent.
#
# Usage: scripts/host-up.sh [--quiet] [--down]
# State: .wp-host/ at the repo root; env in .wp-host/env (same keys as .wp-test/env,
# plus ASKWPD_USER and WEB_GROUP).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

export ASKWPD_WP_SERVER=nginx
export ASKWPD_WP_STATE="$root/.wp-host"
export ASKWPD_DB_NAME=askwpd_host ASKWPD_DB_USER=askwpd_host
export ASKWPD_WP_CONFIG_HOST=localhost
export ASKWPD_WP_ROOT=/srv/www/askwpd-host
export ASKWPD_WP_CONTENT_DIR=/var/lib/askwpd-host/wp-content
export ASKWPD_WP_PORT="${ASKWPD_HOST_PORT:-8091}"

if [[ "${1:-}" == --down ]]; then
  exec bash "$root/scripts/wp-down.sh"
fi
# The site's own tree: hard links to Debian's package (no copy of its 59 MB), with a
# wp-config.php of its own in place of Debian's stub. Rebuilt when the package changed.
if ! cmp -s /usr/share/wordpress/wp-includes/version.php "$ASKWPD_WP_ROOT/wp-includes/version.php" 2>/dev/null; then
  rm -rf "$ASKWPD_WP_ROOT"
  install -d -m 0755 "$(dirname "$ASKWPD_WP_ROOT")"
  cp -al /usr/share/wordpress "$ASKWPD_WP_ROOT"
  rm -f "$ASKWPD_WP_ROOT/wp-config.php" "$ASKWPD_WP_ROOT/.htaccess"
  echo "[host] linked $ASKWPD_WP_ROOT to Debian's WordPress" >&2
fi
# As on a host: PHP may write uploads and plugins into wp-content.
install -d -o www-data -g www-data -m 0755 "$ASKWPD_WP_CONTENT_DIR" "$ASKWPD_WP_CONTENT_DIR/uploads"
bash "$root/scripts/wp-up.sh" "$@"

# The daemon's user: a system account with no shell and no home of its own, in the
# group that can read wp-config.php (the group php-fpm runs as).
web_group=www-data
if ! id -u askwpd >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin askwpd
  echo "[host] created system user askwpd" >&2
fi
id -nG askwpd | tr ' ' '\n' | grep -qx "$web_group" || usermod -a -G "$web_group" askwpd

env_file="$ASKWPD_WP_STATE/env"
grep -q '^ASKWPD_USER=' "$env_file" || printf 'ASKWPD_USER=askwpd\nWEB_GROUP=%s\n' "$web_group" >>"$env_file"

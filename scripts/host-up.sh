#!/usr/bin/env bash
# Brings up the production-shaped test host beside the fast one: the same WordPress
# (7.1; ASKWPD_WP_VERSION=6.1 for Debian's), but served by nginx and php-fpm from
# Debian's packages with PHP running as www-data, under its own host name (localhost),
# tree, database, state dir and a free port; and an unprivileged system user `askwpd`
# in the web server's group, as a site runs the daemon. The end-to-end suites run
# askwpd as that user and PHP as www-data; only this setup runs as root. Idempotent.
#
# Usage: scripts/host-up.sh [--quiet] [--down]
# State: .wp-host/ at the repo root; env in .wp-host/env (same keys as .wp-test/env,
# plus ASKWPD_USER and WEB_GROUP).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

export ASKWPD_WP_SERVER=nginx
export ASKWPD_WP_STATE="${ASKWPD_HOST_STATE:-$root/.wp-host}"
export ASKWPD_SITE_NAME="${ASKWPD_HOST_NAME:-host}"
export ASKWPD_WP_CONFIG_HOST=localhost
export ASKWPD_WP_PORT="${ASKWPD_HOST_PORT:-8091}"

if [[ "${1:-}" == --down ]]; then
  exec bash "$root/scripts/wp-down.sh"
fi
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

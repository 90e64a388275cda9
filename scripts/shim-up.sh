#!/usr/bin/env bash
# Installs the PHP shim (wp-plugin-shim/) into the test WordPress as the plugin
# askwpd-companion (a symlink into $WP_CONTENT_DIR/plugins) and activates it. Idempotent.
#
# Usage: scripts/shim-up.sh [--down]
#   --down   deactivate the plugin and remove the symlink
# Reads the site from .wp-test/env (or $ASKWPD_TEST_WP_ENV); run scripts/wp-up.sh first.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
env_file="${ASKWPD_TEST_WP_ENV:-$root/.wp-test/env}"
die() { printf 'shim-up.sh: %s\n' "$*" >&2; exit 1; }

down=0
case "${1:-}" in
  --down) down=1 ;;
  "") ;;
  -h|--help) sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) die "unknown argument: $1" ;;
esac

[[ -s "$env_file" ]] || die "$env_file is missing: run scripts/wp-up.sh first"
while IFS='=' read -r k v; do
  case "$k" in WP_ROOT|WP_CONTENT_DIR|SITE_URL) printf -v "$k" '%s' "$v" ;; esac
done <"$env_file"
[[ -n "${WP_ROOT:-}" && -n "${WP_CONTENT_DIR:-}" && -n "${SITE_URL:-}" ]] || die "$env_file lacks WP_ROOT, WP_CONTENT_DIR or SITE_URL"

src="$root/wp-plugin-shim"
dst="$WP_CONTENT_DIR/plugins/askwpd-companion"

wp_php() { # code: runs inside WordPress, with the admin API loaded
  SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" php -d display_errors=stderr -r '
    $u = parse_url(getenv("SITE_URL"));
    $_SERVER["HTTP_HOST"] = $u["host"] . (isset($u["port"]) ? ":" . $u["port"] : "");
    $_SERVER["SERVER_NAME"] = $u["host"];
    $_SERVER["REQUEST_URI"] = "/";
    $_SERVER["REQUEST_METHOD"] = "GET";
    define("WP_USE_THEMES", false);
    require rtrim(getenv("WP_ROOT"), "/") . "/wp-load.php";
    require_once ABSPATH . "wp-admin/includes/plugin.php";
    '"$1" </dev/null
}

if ((down)); then
  if [[ -e "$dst" || -L "$dst" ]]; then
    wp_php 'deactivate_plugins("askwpd-companion/askwpd-companion.php"); echo "askwpd-companion: deactivated\n";'
    [[ -L "$dst" ]] && rm -f "$dst"
  fi
  exit 0
fi

# A fresh wp-content (the nginx host's) has no plugins dir yet; it belongs to whoever
# owns wp-content, as WordPress would have made it.
if [[ ! -d "$(dirname "$dst")" ]]; then
  install -d -m 0755 "$(dirname "$dst")"
  chown --reference="$WP_CONTENT_DIR" "$(dirname "$dst")"
fi
if [[ -L "$dst" ]]; then
  [[ "$(readlink "$dst")" == "$src" ]] || ln -sfn "$src" "$dst"
elif [[ -e "$dst" ]]; then
  die "$dst exists and is not our symlink; move it away first"
else
  ln -s "$src" "$dst"
fi
wp_php '
  $p = "askwpd-companion/askwpd-companion.php";
  if (is_plugin_active($p)) { echo "askwpd-companion: active\n"; exit(0); }
  $r = activate_plugin($p);
  if (is_wp_error($r)) { fwrite(STDERR, "activate: " . $r->get_error_message() . "\n"); exit(1); }
  echo "askwpd-companion: activated\n";'

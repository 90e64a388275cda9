#!/usr/bin/env bash
# Does the shim slow the site down when the daemon is stopped? Times page loads (curl,
# a real HTTP request to the test WordPress) and post saves (REST PUT through HTTP, which
# runs the shim's shutdown flush; and wp_update_post + flush in PHP CLI), with the plugin
# inactive and with it active while its daemon URL points at a closed port. Blocks run
# A B A B to spread out the noise of a shared machine. Prints median, mean and p90 in ms.
#
# Usage: bench/shim/measure.sh [N]   (default 50 runs per block)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd "$here/../.." && pwd -P)"
N="${1:-50}"
env_file="${ASKWPD_TEST_WP_ENV:-$root/.wp-test/env}"
WP_STATE_DIR=""
while IFS='=' read -r k v; do
  case "$k" in WP_ROOT|WP_CONTENT_DIR|SITE_URL|WP_STATE_DIR) printf -v "$k" '%s' "$v" ;; esac
done <"$env_file"
[[ -n "$WP_STATE_DIR" ]] || WP_STATE_DIR="$root/.wp-test"
# ASKWPD_NO_TEST_LOCK=1 skips the site's test lock (when a hung holder blocks it).
if [[ -z "${ASKWPD_NO_TEST_LOCK:-}" ]]; then
  exec 8>>"$WP_STATE_DIR/test.lock"
  flock -w 900 8
fi

dead_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
mu="$WP_CONTENT_DIR/mu-plugins/askwpd-bench.php"
mkdir -p "$WP_CONTENT_DIR/mu-plugins"
printf '<?php\ndefine("ASKWPD_URL", "http://127.0.0.1:%s");\ndefine("ASKWPD_WEBHOOK_SECRET", "bench");\ndefine("ASKWPD_TOKEN", "bench");\n' "$dead_port" >"$mu"

wp_php() { SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" php -r '$u=parse_url(getenv("SITE_URL")); $_SERVER["HTTP_HOST"]=$u["host"].":".$u["port"]; $_SERVER["REQUEST_URI"]="/"; define("WP_USE_THEMES",false); require getenv("WP_ROOT")."/wp-load.php"; '"$1"; }
read -r post_id app_pw app_uuid < <(wp_php '
  $id = wp_insert_post(array("post_title" => "askwpd shim bench", "post_status" => "publish", "post_content" => "<p>Bench.</p>"));
  list($pw, $item) = WP_Application_Passwords::create_new_application_password(1, array("name" => "askwpd-bench"));
  echo "$id $pw {$item["uuid"]}\n";')
cleanup() {
  rm -f "$mu"; rmdir "$WP_CONTENT_DIR/mu-plugins" 2>/dev/null || true
  wp_php "wp_delete_post($post_id, true); WP_Application_Passwords::delete_application_password(1, '$app_uuid');" || true
  bash "$root/scripts/shim-up.sh" >/dev/null
}
trap cleanup EXIT
page="$(wp_php "echo get_permalink($post_id);")"

stats() { sort -n | awk '{a[NR]=$1; s+=$1} END {printf "median %7.1f  mean %7.1f  p90 %7.1f  (n=%d)\n", a[int((NR+1)/2)], s/NR, a[int(NR*0.9)], NR}'; }
run_block() { # label
  local label="$1"
  curl -s -o /dev/null "$page"  # warm
  printf '%-34s page load  ' "$label"
  for ((i = 0; i < N; i++)); do curl -s -o /dev/null -w '%{time_total}\n' "$page"; done | awk '{printf "%.3f\n", $1*1000}' | stats
  printf '%-34s REST save  ' "$label"
  for ((i = 0; i < N; i++)); do
    curl -s -o /dev/null -w '%{time_total}\n' -u "admin:$app_pw" -H 'Content-Type: application/json' \
      -X POST -d "{\"content\":\"<p>Bench $i $RANDOM.</p>\"}" "$SITE_URL/wp-json/wp/v2/posts/$post_id"
  done | awk '{printf "%.3f\n", $1*1000}' | stats
  printf '%-34s PHP save   ' "$label"
  SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" php "$here/save.php" "$N" "$post_id" | stats
}

echo "site $SITE_URL, page $page, $N runs per block, daemon URL http://127.0.0.1:$dead_port (closed)"
for round in 1 2; do
  bash "$root/scripts/shim-up.sh" --down >/dev/null
  run_block "round $round: plugin inactive"
  bash "$root/scripts/shim-up.sh" >/dev/null
  run_block "round $round: plugin active, daemon down"
done

#!/usr/bin/env bash
# The demo: a real local WordPress with content, askwpd indexing it and
# serving it, and a sample search_site call over HTTP.
# Usage: scripts/demo.sh        bring it all up (idempotent)
#        scripts/demo.sh stop   stop askwpd and the WordPress server
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
state="$root/.state/demo"
listen="${ASKWPD_DEMO_LISTEN:-127.0.0.1:8787}"
pidfile="$state/askwpd.pid"

stop_daemon() {
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill -TERM "$(cat "$pidfile")"
    for _ in $(seq 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
}

if [ "${1:-}" = "stop" ]; then
  stop_daemon
  bash scripts/wp-down.sh
  echo "demo stopped"
  exit 0
fi

echo "==> WordPress 7.1 (MariaDB, php -S), seeded"
bash scripts/wp-up.sh --quiet
. "$root/.wp-test/env"

echo "==> building askwpd"
mkdir -p bin "$state"
go build -o bin/askwpd ./cmd/askwpd

echo "==> askwpd index (the only setting: wp_root = $WP_ROOT)"
cat > "$state/askwpd.toml" <<TOML
wp_root = "$WP_ROOT"
state_dir = "$state"
listen = "$listen"
TOML
bin/askwpd index --config "$state/askwpd.toml"

echo "==> askwpd serve on $listen"
stop_daemon
nohup bin/askwpd serve --config "$state/askwpd.toml" >"$state/askwpd.log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 100); do
  curl -fsS "http://$listen/healthz" >/dev/null 2>&1 && break
  kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "askwpd exited:"; tail -5 "$state/askwpd.log"; exit 1; }
  sleep 0.1
done
token=$(cat "$state/token")

query="${ASKWPD_DEMO_QUERY:-how do I measure grinder retention}"
echo "==> POST /v1/tools/search_site {\"query\": \"$query\", \"limit\": 2}"
curl -fsS -X POST "http://$listen/v1/tools/search_site" \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d "{\"query\": \"$query\", \"limit\": 2}" | { python3 -m json.tool 2>/dev/null || cat; }

cat <<MSG

The demo is up:
  WordPress      $SITE_URL
  askwpd         http://$listen   (token in $state/token)
  status         curl -H "Authorization: Bearer \$(cat $state/token)" http://$listen/v1/status
  logs           $state/askwpd.log
  search again   bin/askwpd search --config $state/askwpd.toml "your words"
  stop           scripts/demo.sh stop
MSG

#!/usr/bin/env bash
# Runs the shim's PHP test suite inside the real test WordPress.
#   - holds the site's test lock (.wp-test/test.lock) throughout, as the Go tests do;
#   - starts a canned daemon (fake-daemon.php), a scripted LLM (fake-llm.php) and the real
#     askwpd on a temporary state dir, each on a free loopback port;
#   - writes a test mu-plugin that points the shim at them, runs run.php, and removes
#     everything it started or wrote.
# Usage: wp-plugin-shim/tests/run.sh   (ONLY=substring runs matching tests; ASKWPD_BIN=path
# uses a built askwpd instead of building one)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd "$here/../.." && pwd -P)"
env_file="${ASKWPD_TEST_WP_ENV:-$root/.wp-test/env}"
die() { printf 'shim tests: %s\n' "$*" >&2; exit 1; }
[[ -s "$env_file" ]] || die "$env_file is missing: run scripts/wp-up.sh"
WP_STATE_DIR=""
while IFS='=' read -r k v; do
  case "$k" in WP_ROOT|WP_CONTENT_DIR|SITE_URL|WP_STATE_DIR) printf -v "$k" '%s' "$v" ;; esac
done <"$env_file"
[[ -n "$WP_STATE_DIR" ]] || WP_STATE_DIR="$root/.wp-test"

# ASKWPD_NO_TEST_LOCK=1 skips the lock (when a hung holder blocks it).
if [[ -z "${ASKWPD_NO_TEST_LOCK:-}" ]]; then
  exec 8>>"$WP_STATE_DIR/test.lock"
  flock -w 900 8 || die "the site's test lock was held for 900 s"
fi

# Idempotent; here too, so the suite also runs on its own.
bash "$root/scripts/shim-up.sh" >/dev/null

tmp="$(mktemp -d /tmp/askwpd-shim-test.XXXXXX)"
mu_dir="$WP_CONTENT_DIR/mu-plugins"
mu_file="$mu_dir/askwpd-shim-test.php"
made_mu_dir=0
pids=()
cleanup() {
  rm -f "$mu_file"
  ((made_mu_dir)) && rmdir "$mu_dir" 2>/dev/null || true
  # Each server leads its own process group (setsid): php -S forks workers, which
  # would outlive their master.
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { # url what
  for _ in $(seq 1 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done
  die "$2 did not come up at $1"
}

bin="${ASKWPD_BIN:-}"
if [[ -z "$bin" ]]; then
  export PATH="$PATH:/usr/local/go/bin"
  (cd "$root" && go build -o "$tmp/askwpd" ./cmd/askwpd) || die "go build failed"
  bin="$tmp/askwpd"
fi

fake_port=$(free_port)
mkdir -p "$tmp/fake"
# The servers must not inherit fd 8, the lock.
FAKE_DIR="$tmp/fake" PHP_CLI_SERVER_WORKERS=4 setsid php -S "127.0.0.1:$fake_port" "$here/fake-daemon.php" >"$tmp/fake.log" 2>&1 8>&- &
pids+=($!)
llm_port=$(free_port)
PHP_CLI_SERVER_WORKERS=4 setsid php -S "127.0.0.1:$llm_port" "$here/fake-llm.php" >"$tmp/llm.log" 2>&1 8>&- &
pids+=($!)
daemon_port=$(free_port)
# A small crawl budget: the initial pass should not crawl the whole test site; the posts
# the tests create reach the index through the webhooks. --site-url picks the site's own
# file when wp-config.php includes one of several per host (Debian's scheme).
setsid "$bin" serve --wp-root "$WP_ROOT" --site-url "$SITE_URL" --state-dir "$tmp/state" --listen "127.0.0.1:$daemon_port" \
  --set schedule.disabled=true --set crawl.budget=10 \
  --set provider.kind=openai-compatible --set "provider.base_url=http://127.0.0.1:$llm_port/v1" \
  --set provider.model=test --set provider.api_key=x >"$tmp/daemon.log" 2>&1 8>&- &
pids+=($!)
dead_port=$(free_port)

wait_http "http://127.0.0.1:$fake_port/healthz" "the canned daemon"
wait_http "http://127.0.0.1:$llm_port/" "the scripted LLM"
wait_http "http://127.0.0.1:$daemon_port/healthz" "askwpd"

[[ -d "$mu_dir" ]] || { mkdir -p "$mu_dir"; made_mu_dir=1; }
echo '{}' >"$tmp/config.json"
sed "s#@CONFIG_FILE@#$tmp/config.json#" "$here/mu-plugin.php.in" >"$mu_file"

rc=0
SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" FAKE_URL="http://127.0.0.1:$fake_port" FAKE_DIR="$tmp/fake" \
  DAEMON_URL="http://127.0.0.1:$daemon_port" DAEMON_STATE="$tmp/state" DEAD_URL="http://127.0.0.1:$dead_port" \
  CONFIG_FILE="$tmp/config.json" php -d display_errors=stderr "$here/run.php" || rc=$?
if ((rc)) && [[ -n "${SHIM_TEST_LOGS:-1}" ]]; then
  echo "--- askwpd log (last 15 lines)"; tail -n 15 "$tmp/daemon.log" || true
fi
exit "$rc"

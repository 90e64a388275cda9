#!/usr/bin/env bash
# Runs the shim's PHP test suite inside the real test WordPress.
#   - holds the site's test lock (.wp-test/test.lock) throughout, as the Go tests do;
#   - starts a canned daemon (fake-daemon.php), a scripted LLM (fake-llm.php) and the real
#     askwpd on a temporary state dir, each on a free loopback port;
#   - writes a test mu-plugin that points the shim at them, runs run.php, and removes
#     everything it started or wrote;
#   - on WordPress 6.9+, copies the shared MCP Adapter plugin (../shared/wordpress/
#     mcp-adapter) into the site's plugins dir, for the tests to activate, and installs the
#     official MCP TypeScript SDK (tests/mcp-client, from its package-lock.json) into a
#     temporary dir with npm, for test-9-mcp.php to run.
# With the env file of the nginx host (ASKWPD_TEST_WP_ENV=.wp-host/env, from
# scripts/host-up.sh, which names ASKWPD_USER and WEB_GROUP), it runs as a site runs:
# askwpd as ASKWPD_USER, creating its own state dir (askwpd:WEB_GROUP 0750) and serving on
# a unix socket; the test code and the fakes as the web server's user. The shim is given
# only the socket and the state dir, and reads the secrets from it. Only this setup runs
# as root.
# Usage: wp-plugin-shim/tests/run.sh   (ONLY=substring runs matching tests; ASKWPD_BIN=path
# uses a built askwpd instead of building one)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd "$here/../.." && pwd -P)"
env_file="${ASKWPD_TEST_WP_ENV:-$root/.wp-test/env}"
die() { printf 'shim tests: %s\n' "$*" >&2; exit 1; }
[[ -s "$env_file" ]] || die "$env_file is missing: run scripts/wp-up.sh"
WP_STATE_DIR="" ASKWPD_USER="" WEB_GROUP=""
while IFS='=' read -r k v; do
  case "$k" in WP_ROOT|WP_CONTENT_DIR|SITE_URL|WP_STATE_DIR|ASKWPD_USER|WEB_GROUP) printf -v "$k" '%s' "$v" ;; esac
done <"$env_file"
[[ -n "$WP_STATE_DIR" ]] || WP_STATE_DIR="$root/.wp-test"

# ASKWPD_NO_TEST_LOCK=1 skips the lock (when a hung holder blocks it).
if [[ -z "${ASKWPD_NO_TEST_LOCK:-}" ]]; then
  exec 8>>"$WP_STATE_DIR/test.lock"
  flock -w 900 8 || die "the site's test lock was held for 900 s"
fi

# Idempotent; here too, so the suite also runs on its own.
ASKWPD_TEST_WP_ENV="$env_file" bash "$root/scripts/shim-up.sh" >/dev/null

# as_web and as_daemon prefix the commands that a site runs as the web server's user and
# as askwpd's; both empty with php -S, where everything runs as the caller.
as_web=() as_daemon=() web_user=""
if [[ -n "$ASKWPD_USER" ]]; then
  ((EUID == 0)) || die "the host run starts askwpd as $ASKWPD_USER and PHP as the web server's user: run it as root"
  # The group's user, as php-fpm's pool names it (www-data for www-data).
  web_user="${WEB_GROUP:-www-data}"
  id -u "$web_user" >/dev/null 2>&1 || die "no user $web_user for the web group $WEB_GROUP"
  # A PATH of its own: root's may name dirs it cannot search (/root/...).
  as_web=(runuser -u "$web_user" -- env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  as_daemon=(runuser -u "$ASKWPD_USER" --)
fi

tmp="$(mktemp -d /tmp/askwpd-shim-test.XXXXXX)"
mu_dir="$WP_CONTENT_DIR/mu-plugins"
mu_file="$mu_dir/askwpd-shim-test.php"
made_mu_dir=0
mcp_plugin="$WP_CONTENT_DIR/plugins/mcp-adapter"
made_mcp_plugin=0
pids=()
cleanup() {
  rm -f "$mu_file"
  ((made_mcp_plugin)) && rm -rf "$mcp_plugin"
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
  # Not $tmp/askwpd: the host run installs its copy there.
  (cd "$root" && go build -o "$tmp/askwpd.build" ./cmd/askwpd) || die "go build failed"
  bin="$tmp/askwpd.build"
fi

fake_port=$(free_port)
mkdir -p "$tmp/fake"
echo '{}' >"$tmp/config.json"
state="$tmp/state"
daemon_listen="127.0.0.1:$(free_port)"
daemon_url="http://$daemon_listen"
if [[ -n "$ASKWPD_USER" ]]; then
  "${as_web[@]}" test -r "$root/wp-plugin-shim/askwpd-companion.php" \
    || die "$web_user cannot read $root/wp-plugin-shim: the host run needs a checkout the web server can read"
  # The checkout may be where askwpd cannot reach (/root/...): a copy of its own.
  install -m 0755 "$bin" "$tmp/askwpd"
  bin="$tmp/askwpd"
  # What the package's tmpfiles.d and the unit give the daemon: a parent it may create its
  # state dir in (/var/lib), and a runtime dir askwpd:WEBGROUP 0750 (/run/askwpd).
  chmod 0755 "$tmp"
  install -d -o "$ASKWPD_USER" -m 0755 "$tmp/lib"
  install -d -o "$ASKWPD_USER" -g "$WEB_GROUP" -m 0750 "$tmp/run"
  state="$tmp/lib/askwpd"
  daemon_listen="unix:$tmp/run/askwpd.sock"
  daemon_url="$daemon_listen"
  # The test code (as the web server) rewrites the config and clears the fake's events.
  chown "$web_user" "$tmp/fake" "$tmp/config.json"
fi
# The servers must not inherit fd 8, the lock.
FAKE_DIR="$tmp/fake" PHP_CLI_SERVER_WORKERS=4 setsid "${as_web[@]}" php -S "127.0.0.1:$fake_port" "$here/fake-daemon.php" >"$tmp/fake.log" 2>&1 8>&- &
pids+=($!)
llm_port=$(free_port)
PHP_CLI_SERVER_WORKERS=4 setsid "${as_web[@]}" php -S "127.0.0.1:$llm_port" "$here/fake-llm.php" >"$tmp/llm.log" 2>&1 8>&- &
pids+=($!)
# A small crawl budget: the initial pass should not crawl the whole test site; the posts
# the tests create reach the index through the webhooks. --site-url picks the site's own
# file when wp-config.php includes one of several per host (Debian's scheme).
setsid "${as_daemon[@]}" "$bin" serve --wp-root "$WP_ROOT" --site-url "$SITE_URL" --state-dir "$state" --listen "$daemon_listen" \
  --set schedule.disabled=true --set crawl.budget=10 \
  --set provider.kind=openai-compatible --set "provider.base_url=http://127.0.0.1:$llm_port/v1" \
  --set provider.model=test --set provider.api_key=x >"$tmp/daemon.log" 2>&1 8>&- &
pids+=($!)
dead_port=$(free_port)

wait_http "http://127.0.0.1:$fake_port/healthz" "the canned daemon"
wait_http "http://127.0.0.1:$llm_port/" "the scripted LLM"
if [[ -n "$ASKWPD_USER" ]]; then
  sock="${daemon_listen#unix:}"
  up=0
  for _ in $(seq 1 100); do curl -s -o /dev/null --unix-socket "$sock" http://localhost/healthz && { up=1; break; }; sleep 0.1; done
  ((up)) || { tail -n 20 "$tmp/daemon.log" >&2; die "askwpd did not come up on $sock"; }
  # The contract, as the daemon left it: checked here, where root may look at everything.
  got="$(stat -c '%a %U:%G' "$state" "$state/token" "$state/webhook.secret" "$sock" | tr '\n' ' ')"
  want="750 $ASKWPD_USER:$WEB_GROUP 640 $ASKWPD_USER:$WEB_GROUP 640 $ASKWPD_USER:$WEB_GROUP 660 $ASKWPD_USER:$WEB_GROUP "
  [[ "$got" == "$want" ]] || { tail -n 20 "$tmp/daemon.log" >&2; die "state dir and socket are '$got', want '$want'"; }
  echo "askwpd as $ASKWPD_USER on $daemon_listen; state dir, secrets and socket: $got"
else
  wait_http "$daemon_url/healthz" "askwpd"
fi

[[ -d "$mu_dir" ]] || { mkdir -p "$mu_dir"; made_mu_dir=1; }
sed "s#@CONFIG_FILE@#$tmp/config.json#" "$here/mu-plugin.php.in" >"$mu_file"
chmod 0644 "$mu_file"

# The MCP Adapter and the MCP client, where the Abilities API is (6.9+).
mcp_adapter="" mcp_client="" mcp_note=""
wp_version="$(sed -n "s/^\$wp_version = '\([^']*\)';/\1/p" "$WP_ROOT/wp-includes/version.php")"
if [[ "$(printf '%s\n6.9\n' "$wp_version" | sort -V | head -n1)" == "6.9" ]]; then
  shared_adapter="$root/../shared/wordpress/mcp-adapter"
  if [[ -d "$mcp_plugin" ]]; then
    mcp_adapter="$mcp_plugin"
  elif [[ -f "$shared_adapter/mcp-adapter.php" ]]; then
    # A copy, not a symlink: the web server's user must read it on the nginx host.
    cp -R "$shared_adapter" "$mcp_plugin" && chmod -R u+w,go+rX "$mcp_plugin" && made_mcp_plugin=1 && mcp_adapter="$mcp_plugin"
  else
    mcp_note="no MCP Adapter at $shared_adapter"
  fi
  if command -v npm >/dev/null; then
    mkdir -p "$tmp/mcp-client"
    cp "$here/mcp-client/package.json" "$here/mcp-client/package-lock.json" "$here/mcp-client/client.mjs" "$tmp/mcp-client/"
    if (cd "$tmp/mcp-client" && npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1); then
      chmod -R go+rX "$tmp/mcp-client"
      mcp_client="$tmp/mcp-client/client.mjs"
    else
      mcp_note="npm ci failed: $(tail -n 3 "$tmp/npm.log" | tr '\n' ' ')"
    fi
  else
    mcp_note="npm is not installed"
  fi
fi

rc=0
"${as_web[@]}" env MCP_ADAPTER="$mcp_adapter" MCP_CLIENT="$mcp_client" MCP_NOTE="$mcp_note" SITE_URL="$SITE_URL" WP_ROOT="$WP_ROOT" FAKE_URL="http://127.0.0.1:$fake_port" FAKE_DIR="$tmp/fake" \
  DAEMON_URL="$daemon_url" DAEMON_STATE="$state" DEAD_URL="http://127.0.0.1:$dead_port" \
  ASKWPD_BIN="$bin" LLM_URL="http://127.0.0.1:$llm_port/v1" \
  CONFIG_FILE="$tmp/config.json" ONLY="${ONLY:-}" php -d display_errors=stderr "$here/run.php" || rc=$?
if ((rc)) && [[ -n "${SHIM_TEST_LOGS:-1}" ]]; then
  echo "--- askwpd log (last 15 lines)"; tail -n 15 "$tmp/daemon.log" || true
fi
exit "$rc"

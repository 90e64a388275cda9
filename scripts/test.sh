#!/usr/bin/env bash
# The test command: everything CI checks, on a real WordPress. Runs as root on Debian 12
# and installs what it needs (PHP, MariaDB when none answers, nginx, php-fpm, Chromium).
#
# Usage: scripts/test.sh [STEP...]    every step in order, or only the ones named
#        scripts/test.sh --list       the steps, one a line
# ASKWPD_GO_TEST_FLAGS adds flags to the go test runs (e.g. "-run TestIndex").
#
# WordPress 7.1 (../shared/wordpress) is the primary test version: every step but wp61
# runs on it. wp61 runs the shim's suite and the spine on Debian's WordPress 6.1, the
# oldest version supported.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "test.sh: Go is not installed (want go 1.26)" >&2; exit 1; }
read -r -a go_flags <<<"${ASKWPD_GO_TEST_FLAGS:-}"

steps=(lint shim host network deb cluster galera go faults store mcp tut sites shop bench fuzz wp61)
declare -A about=(
  [lint]="gofmt, go vet, staticcheck, deadcode, php -l, systemd-analyze verify on the unit"
  [shim]="the shim's suite inside WordPress 7.1 (php -S)"
  [host]="nginx + php-fpm as www-data, askwpd as its own user: the shim's suite, and the same pages as php -S"
  [network]="a WordPress network (subdirectory sites, a mapped domain, the shim network-activated)"
  [deb]="the Debian package: build, install, run as askwpd:www-data, remove, purge"
  [cluster]="three serve processes: a post searchable on every node within 1 s"
  [galera]="three serve processes, each on its own node of a three-node Galera cluster: a node paused, a leader and its node killed, a burst"
  [go]="go test -race over every package, end-to-end tests included"
  [faults]="the site (500, 503/429 with Retry-After, timeouts, refusals, a body cut off, sitemaps hanging) and its database (refused, cut mid-query, read-only), during a full and an incremental pass or serve"
  [store]="a damaged store heals (deleted, random pages, cut short while serving; damaged at start); an earlier build's store migrates, a newer one is refused"
  [mcp]="/mcp judged by the official clients: the conformance suite and the TypeScript SDK (npm), every revision"
  [tut]="the Theme Unit Test import on 7.1, one site per theme (Twenty Twenty-Five, Twenty Twenty-Four): extraction"
  [sites]="the SEO test site behind Varnish (10-minute TTL): origin pinning, cache bypass, Yoast- and Rank Math-shaped fixtures"
  [shop]="WooCommerce- and Polylang-shaped fixtures on a site of their own: products, price and stock filters, languages"
  [bench]="every testing.B benchmark, once (-benchtime=1x), so none can rot"
  [fuzz]="every Go fuzz target (wp-config.php, sitemaps, feeds, extraction, webhooks, /mcp, ...) for a few seconds each, from its corpus in testdata/fuzz/"
  [wp61]="Debian's WordPress 6.1: the shim's suite and the spine"
)
if [[ "${1:-}" == --list ]]; then
  for s in "${steps[@]}"; do printf '%-8s %s\n' "$s" "${about[$s]}"; done
  exit 0
fi
want=("$@")
((${#want[@]})) || want=("${steps[@]}")
for s in "${want[@]}"; do
  [[ -n "${about[$s]:-}" ]] || { echo "test.sh: no step '$s' (scripts/test.sh --list)" >&2; exit 2; }
done

say() { printf '\n==> %s\n' "$*"; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

ensure_apt() { # command package
  command -v "$1" >/dev/null && return 0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }
}

askwpd_bin() {
  if [[ ! -x bin/askwpd.test-build ]]; then
    mkdir -p bin
    go build -o bin/askwpd.test-build ./cmd/askwpd
  fi
  echo "$root/bin/askwpd.test-build"
}

wp_up() { # the fast site, 7.1 on php -S: most steps need it
  [[ -n "${wp_is_up:-}" ]] && return 0
  say "test WordPress 7.1 (php -S)"
  bash scripts/wp-up.sh --quiet
  export ASKWPD_TEST_WP_ENV="$root/.wp-test/env"
  wp_is_up=1
}

step_lint() {
  say "gofmt"
  local unformatted
  unformatted=$(find . -name '*.go' -not -path './.wp-*' -not -path './.state/*' -print0 | xargs -0 gofmt -l)
  if [[ -n "$unformatted" ]]; then echo "gofmt would change:"; echo "$unformatted"; return 1; fi
  say "go vet"
  go vet ./...
  say "staticcheck and deadcode"
  bash scripts/lint.sh
  say "php -l"
  ensure_apt php php-cli
  find . -name '*.php' -not -path './.wp-*' -print0 | while IFS= read -r -d '' f; do
    php -l "$f" >/dev/null || { php -l "$f"; exit 1; }
  done
  say "systemd unit"
  ensure_apt systemd-analyze systemd
  # verify checks that ExecStart exists, so point it at the binary just built.
  sed "s#/usr/local/bin/askwpd#$(askwpd_bin)#" systemd/askwpd.service >"$tmp/askwpd.service"
  systemd-analyze verify "$tmp/askwpd.service"
  echo "systemd-analyze verify: ok"
}

step_shim() {
  wp_up
  say "PHP shim (wp-plugin-shim/tests, inside WordPress 7.1)"
  bash scripts/shim-up.sh && ASKWPD_BIN="$(askwpd_bin)" bash wp-plugin-shim/tests/run.sh
}

step_host() {
  wp_up
  say "nginx host (nginx + php-fpm with PHP as www-data, a system user askwpd)"
  bash scripts/host-up.sh --quiet
  say "PHP shim on the nginx host (askwpd as askwpd on a unix socket, PHP as www-data)"
  ASKWPD_TEST_WP_ENV="$root/.wp-host/env" ASKWPD_BIN="$(askwpd_bin)" bash wp-plugin-shim/tests/run.sh
  say "the same pages on both stacks (indexed URL sets of php -S and nginx)"
  ASKWPD_BIN="$(askwpd_bin)" bash scripts/compare-hosts.sh
}

step_network() {
  say "WordPress network on 7.1 (nginx + php-fpm)"
  bash scripts/network-up.sh --quiet
  ASKWPD_TEST_NETWORK_ENV="$root/.wp-network/env" go test -race -count=1 "${go_flags[@]}" -run 'Network' ./wp/ ./daemon/ ./cmd/askwpd/
}

step_deb() {
  say "Debian package on the 7.1 nginx host"
  # One at a time on a machine: it installs and purges a system package. -o: the
  # test host's nginx and php-fpm, which outlive the test, must not inherit the
  # lock (they held it for as long as they ran).
  flock -o -w 1800 /tmp/askwpd-deb-test.lock bash scripts/deb-test.sh
}

step_cluster() {
  wp_up
  say "cluster"
  # Alone: its 1 s is a latency claim about a site, and beside the daemon package's
  # tests, which crawl the same test site, the page's render waited its turn.
  go test -race -count=1 "${go_flags[@]}" -run 'TestCluster_' ./cmd/askwpd/
}

step_galera() {
  local tools="$root/../shared/tools/galera"
  if [[ ! -x "$tools/up.sh" ]]; then
    echo "galera: no $tools (../shared/tools/galera); skipped"
    return 0
  fi
  [[ -f /usr/lib/galera/libgalera_smm.so ]] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends galera-4 >/dev/null
  ensure_apt rsync rsync
  ensure_apt mariadbd mariadb-server
  say "a three-node Galera cluster (../shared/tools/galera/up.sh, the README's tight failure detection)"
  (
    # Its ports are the machine's: one cluster at a time. What outlives
    # the step (php -S) must not hold the lock: 7>&-.
    exec 7>/tmp/askwpd-galera.lock
    flock -w 1800 7 || { echo "galera: /tmp/askwpd-galera.lock held for 30 min" >&2; exit 1; }
    export GALERA_BASE="${ASKWPD_GALERA_BASE:-/tmp/askwpd-galera}"
    export EXTRA_PROVIDER_OPTS='evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S'
    trap '"$tools/down.sh" >/dev/null 2>&1 || true' EXIT
    # The template is a datadir of an earlier run, WordPress installed:
    # every node starts from it, with no state transfer and no install.
    init=install
    [[ -f "$GALERA_BASE/template/data/grastate.dat" ]] && init=template
    INIT=$init "$tools/up.sh" 7>&- | tail -n 1
    wpenv="$root/.wp-galera/env"
    ASKWPD_DB_PORT=3311 ASKWPD_DB_SOCKET="$GALERA_BASE/node1/mysqld.sock" ASKWPD_SITE_NAME=galera \
      ASKWPD_WP_STATE="$root/.wp-galera" bash scripts/wp-up.sh --quiet 7>&-
    ASKWPD_TEST_WP_ENV="$wpenv" bash scripts/shim-up.sh
    say "Galera: the cluster package's races, then three heads through a pause, a kill and a burst"
    # -p 1: the races would load the cluster whose latencies the heads' test measures.
    ASKWPD_TEST_GALERA="$GALERA_BASE" ASKWPD_TEST_WP_ENV="$wpenv" go test -race -count=1 -timeout 15m "${go_flags[@]}" \
      -p 1 -run '^TestGalera_|^TestCluster_(LeaseAndPublish|ServerErrorNumber)$' ./cluster/ ./cmd/askwpd/ 7>&-
    if [[ "$init" == install ]]; then
      # As make-template.sh does, from this run's clean shutdown: nodes
      # stopped together all end with safe_to_bootstrap 0, any will do.
      "$tools/down.sh" >/dev/null
      src="$(grep -l '^safe_to_bootstrap: 1' "$GALERA_BASE"/node*/data/grastate.dat 2>/dev/null | head -n 1 || true)"
      [[ -n "$src" ]] || src="$GALERA_BASE/node1/data/grastate.dat"
      if [[ -f "$src" ]] && ! grep -q '^seqno: *-1' "$src"; then
        rm -rf "$GALERA_BASE/template" && mkdir -p "$GALERA_BASE/template" && cp -a "$(dirname "$src")" "$GALERA_BASE/template/data"
        rm -f "$GALERA_BASE/template/data/gvwstate.dat"
        echo "galera: the next run starts from a template of $(dirname "$src")"
      fi
    fi
  )
}

step_go() {
  wp_up
  say "go test -race"
  # The admin page test drives a real headless Chromium.
  ensure_apt chromium chromium
  # The network's and the cluster's tests ran in their own steps.
  go test -race -count=1 -timeout 20m "${go_flags[@]}" \
    -skip 'TestCluster_|^TestNetwork_RealWordPress$|^TestNetworkSiteSchedules$|^TestNetworkFromConfig$|^TestNetworkSites$|^TestMCP_OfficialClients$|^TestExtraction_ThemeUnitTest$|^TestFaults?_|^TestPageCache_|^TestSEO_|^TestOrigin_(ShimProves|Discovery)$|^TestIndex_HandsOffToServeOnANetwork$|^TestServe_HealsDamagedStore$|^TestStore_EarlierBuildMigrated$' ./...
}

step_mcp() {
  wp_up
  say "the official MCP clients from npm (api/testdata/mcp-node: package-lock.json)"
  ensure_apt npm npm
  (cd api/testdata/mcp-node && npm ci --no-audit --no-fund --loglevel=error)
  say "MCP: the conformance suite and the TypeScript SDK against askwpd serve, and every revision's client"
  # The clients' test skips when they are not installed; here they are.
  ASKWPD_REQUIRE_MCP_CLIENTS=1 go test -race -count=1 "${go_flags[@]}" -run '^TestMCP' ./api/ ./cmd/askwpd/
}

step_faults() {
  wp_up
  say "the fault suite: the site and its database failing during passes and serve"
  go test -race -count=1 -timeout 15m "${go_flags[@]}" -run '^TestFaults?_' ./daemon/
}

step_store() {
  wp_up
  say "store faults: a damaged store heals while serving and at start; an earlier build's store migrates"
  go test -race -count=1 "${go_flags[@]}" -run '^(TestServe_HealsDamagedStore|TestStore_EarlierBuildMigrated)$' ./cmd/askwpd/
}

step_sites() {
  say "the sites owners run: SEO-plugin fixtures and a page cache (Varnish) in front"
  bash scripts/varnish-up.sh >/dev/null
  ASKWPD_TEST_SEO_ENV="$root/.wp-seo/env" go test -race -count=1 "${go_flags[@]}" \
    -run '^(TestPageCache_Varnish|TestOrigin_ShimProves|TestOrigin_Discovery|TestSEO_Yoast|TestSEO_RankMath|TestSEO_NoindexHomeStillCrawled)$' ./daemon/
}

step_shop() {
  say "shop and languages: WooCommerce- and Polylang-shaped fixtures on their own site"
  local state="$root/.wp-shop"
  ASKWPD_SITE_NAME=shop ASKWPD_WP_STATE="$state" bash scripts/wp-up.sh --quiet
  ASKWPD_TEST_SHOP_ENV="$state/env" go test -race -count=1 "${go_flags[@]}" -run '^(TestShop_|TestLang_)' ./tool/
}

step_tut() {
  # Sites of their own, beside the seeded test site the other steps expect as seeded.
  say "Theme Unit Test import on WordPress 7.1: Twenty Twenty-Five and Twenty Twenty-Four"
  ASKWPD_SITE_NAME=tut ASKWPD_WP_STATE="$root/.wp-tut" bash scripts/wp-up.sh --wxr --quiet
  ASKWPD_SITE_NAME=tut24 ASKWPD_WP_STATE="$root/.wp-tut24" ASKWPD_WP_THEME=twentytwentyfour \
    bash scripts/wp-up.sh --wxr --quiet
  ASKWPD_TEST_TUT_ENVS="$root/.wp-tut/env,$root/.wp-tut24/env" go test -race -count=1 "${go_flags[@]}" \
    -run '^TestExtraction_ThemeUnitTest$' ./daemon/
}

step_bench() {
  say "benchmarks, once each"
  go test -count=1 -run '^$' -bench . -benchtime=1x "${go_flags[@]}" ./...
}

step_fuzz() {
  say "fuzzing: every Go fuzz target for ${ASKWPD_FUZZ_TIME:=5s}, its committed corpus first"
  ASKWPD_FUZZ_TIME="$ASKWPD_FUZZ_TIME" bash scripts/fuzz.sh
}

step_wp61() {
  say "Debian's WordPress 6.1 (php -S): the oldest supported version"
  local state="$root/.wp-test61"
  ASKWPD_WP_VERSION=6.1 ASKWPD_SITE_NAME=test61 ASKWPD_WP_STATE="$state" ASKWPD_WP_PORT=8189 \
    bash scripts/wp-up.sh --quiet
  ASKWPD_TEST_WP_ENV="$state/env" bash scripts/shim-up.sh
  ASKWPD_TEST_WP_ENV="$state/env" ASKWPD_BIN="$(askwpd_bin)" bash wp-plugin-shim/tests/run.sh
  say "the spine on 6.1: index, extraction, search, quotes, events, nothing private"
  ASKWPD_TEST_WP_ENV="$state/env" go test -race -count=1 "${go_flags[@]}" \
    -run '^(TestIndex_RealWordPress|TestExtraction_BlockThemePages|TestEvents_RealWordPress|TestPrivate_NothingLeaks|TestTools_SearchSiteFindsEachPost|TestTools_VerifyQuoteFindsEveryPassage|TestChatGates)$' ./daemon/
}

rm -f bin/askwpd.test-build
for s in "${want[@]}"; do
  t0=$SECONDS
  "step_$s"
  printf '==> %s: ok (%d s)\n' "$s" "$((SECONDS - t0))"
done

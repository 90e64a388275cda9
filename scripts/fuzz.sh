#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzX(f *testing.F) in a _test.go file)
# for a bounded time each: first its seeds and its committed corpus
# (testdata/fuzz/FuzzX/), then new inputs. A finding fails the run, and Go
# writes the input that failed to testdata/fuzz/FuzzX/ in the package:
# fix the bug and commit that file, the regression's corpus entry.
#
# Usage: scripts/fuzz.sh [PATTERN]   the targets whose name matches PATTERN (a grep -E regex)
# ASKWPD_FUZZ_TIME   how long each target runs (default 10s; go test -fuzztime)
# ASKWPD_FUZZ_PARALLEL   fuzzing workers per target (default: GOMAXPROCS)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"
fuzztime="${ASKWPD_FUZZ_TIME:-10s}"
pattern="${1:-.}"
parallel=()
[[ -n "${ASKWPD_FUZZ_PARALLEL:-}" ]] && parallel=(-parallel "$ASKWPD_FUZZ_PARALLEL")

# "pkg dir<TAB>FuzzName", one a line, in a stable order.
mapfile -t targets < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . \
  | sed -E 's#^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1\t\2#' \
  | grep -E "	.*${pattern}" | sort -u)
((${#targets[@]})) || { echo "fuzz.sh: no fuzz target matches '$pattern'" >&2; exit 2; }

failed=()
for t in "${targets[@]}"; do
  dir="${t%%	*}" name="${t##*	}"
  printf '\n==> %s ./%s/ for %s\n' "$name" "$dir" "$fuzztime"
  start=$SECONDS
  if ! go test -count=1 -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "${parallel[@]}" "./$dir/"; then
    failed+=("$name (./$dir/)")
  fi
  echo "$name: $((SECONDS - start)) s with its build"
done
if ((${#failed[@]})); then
  printf '\nfuzz.sh: findings (inputs under testdata/fuzz/ of each package):\n'
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
printf '\nfuzz.sh: %d targets, no finding\n' "${#targets[@]}"

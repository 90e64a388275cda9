#!/usr/bin/env bash
# Static checks beyond go vet: staticcheck and deadcode, each pinned in
# go.mod's tool block and fetched through the Go module proxy. Both must
# report nothing; a finding kept on purpose is suppressed at its line with
# the reason beside it (//lint:ignore for staticcheck; deadcode has no
# suppression, so what it finds is deleted).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"

echo "staticcheck $(go tool staticcheck -version)"
go tool staticcheck ./...

# deadcode reports functions no test or main reaches; -test counts the
# tests as roots, so a helper kept only for a test is not dead.
dead=$(go tool deadcode -test ./...)
if [ -n "$dead" ]; then
  echo "deadcode found unreachable functions:"; echo "$dead"; exit 1
fi
echo "deadcode: nothing unreachable"

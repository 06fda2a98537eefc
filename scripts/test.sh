#!/usr/bin/env bash
# The whole test suite: the guest toolchains (installed if missing),
# formatting, vet, and every Go test (examples run through the real weir
# binary, every SDK's plugins through the conformance suite). This is the
# README's test command, and .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchains (C, Rust, AssemblyScript guests)"
./scripts/install-toolchains.sh
# The toolchains were just installed, so a test that finds one missing
# fails instead of skipping (weirtest.NeedToolchain); plain `go test`
# skips such tests. .ci/run sets this too.
export WEIR_REQUIRE_TOOLCHAINS="${WEIR_REQUIRE_TOOLCHAINS:-1}"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt -l lists unformatted files:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...
GOOS=wasip1 GOARCH=wasm go vet ./guest-sdk/... ./plugins/... $(go list ./examples/... | grep /plugins/ | sed "s|github.com/weir-stream/weir|.|")

# The engine runs once, under the race detector below: none of its tests
# depends on -short, so running it twice would only repeat the same
# assertions. host/ runs in both: whole here, and in the race pass with
# -short, which trims its slowest plugin-swap tests.
race_only='github.com/weir-stream/weir/host/internal/engine'

# -parallel 4: most parallel tests wait on child processes, group
# sessions and deadlines rather than compute, so four at a time keep two
# cores busy. For the same reason the race pass runs beside the main one,
# its output held back until the main one is done, so that neither waits
# for the other's slowest package.
race_out=$(mktemp)
go test -race -short -count=1 -parallel 4 -timeout 20m ./host/ ./host/internal/engine/ ./host/internal/kafka/ ./host/internal/wasm/ ./state/ >"$race_out" 2>&1 &
race_pid=$!
trap 'kill "$race_pid" 2>/dev/null || true; rm -f "$race_out"' EXIT

echo "== go test"
main_status=0
go test -count=1 -parallel 4 -timeout 20m "$@" $(go list ./... | grep -vxF "$race_only") || main_status=$?

echo "== go test -race (the concurrent packages)"
race_status=0
wait "$race_pid" || race_status=$?
cat "$race_out"
if [ "$main_status" -ne 0 ] || [ "$race_status" -ne 0 ]; then
  echo "FAIL: go test exited $main_status, go test -race exited $race_status"
  exit 1
fi

#!/bin/sh
# release.sh builds weir's release binaries: static (CGO_ENABLED=0),
# stripped, reproducible (-trimpath, -buildvcs=false) executables for
# linux/amd64 and linux/arm64, each carrying the guest SDKs of this
# checkout, with its version set (weir version prints it) and a SHA256SUMS
# file, in OUT (default dist/):
#
#   scripts/release.sh [VERSION] [OUT]
#
# VERSION defaults to `git describe --tags --always --dirty`. Extra
# platforms: PLATFORMS="linux/amd64 linux/arm64 darwin/arm64" scripts/release.sh.
# The container image is the Dockerfile at the root (docker build -t weir .).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
out=${2:-dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64}
mkdir -p "$out"
for p in $platforms; do
	os=${p%/*}
	arch=${p#*/}
	bin="$out/weir-$version-$os-$arch"
	echo "release: $bin"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version" -o "$bin" ./cmd/weir
done
(cd "$out" && sha256sum weir-"$version"-* >SHA256SUMS)
echo "release: $out/SHA256SUMS"

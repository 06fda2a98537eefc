#!/bin/sh
# gen.sh rebuilds the hand-written conformance modules: each *.wat here
# becomes the .wasm beside it. Needs wat2wasm from wabt; the .wasm files are
# committed, so the tests do not.
set -eu
cd "$(dirname "$0")"
for src in *.wat; do
	wat2wasm "$src" -o "${src%.wat}.wasm"
done

#!/bin/sh
# gen.sh rebuilds the test modules: every *.wat here becomes the .wasm beside
# it. A line ";; #include lib/NAME.wati" is replaced by that file first, so
# the guests share one record reader and one output-frame writer.
#
# Needs wat2wasm from wabt. The built modules are committed, so the tests do
# not need wabt; run this after editing a .wat file.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for src in *.wat; do
	awk '
		/^[ \t]*;; #include / {
			file = $3
			while ((getline line < file) > 0) print line
			close(file)
			next
		}
		{ print }
	' "$src" >"$tmp/$src"
	wat2wasm --debug-names "$tmp/$src" -o "${src%.wat}.wasm"
done

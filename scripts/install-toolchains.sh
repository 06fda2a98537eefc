#!/bin/sh
# install-toolchains.sh installs, idempotently, what the non-Go guest SDKs
# and their conformance plugins need to build:
#   C:               clang, lld, wasi-libc, libclang-rt-14-dev-wasm32 (apt)
#   Rust:            Debian's rustc, cargo and libstd-rust-dev-wasm32 (apt),
#                    at /usr/bin; crates only from Debian's librust-*-dev
#   AssemblyScript:  the assemblyscript npm package, in guest-sdk/assemblyscript
#   Console test:    Debian's chromium (apt), at /usr/bin/chromium, for the
#                    admin console's browser test
# It does nothing for what is already there, and needs root (or sudo) only
# when an apt package is missing. Run from anywhere in the checkout.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)

apt_pkgs="clang lld wasi-libc libclang-rt-14-dev-wasm32 rustc cargo libstd-rust-dev-wasm32 librust-serde-json-dev wabt"
apt_pkgs="$apt_pkgs chromium"
missing=""
for p in $apt_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-toolchains: apt-get install$missing"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq </dev/null >/dev/null
	$sudo apt-get install -y -qq $missing </dev/null >/dev/null
fi

as_dir="$root/guest-sdk/assemblyscript"
if [ -f "$as_dir/package.json" ] && [ ! -x "$as_dir/node_modules/.bin/asc" ]; then
	echo "install-toolchains: npm install (guest-sdk/assemblyscript)"
	(cd "$as_dir" && npm install --no-audit --no-fund --silent </dev/null)
fi
echo "install-toolchains: clang $(clang --version | head -1 | sed 's/.*version //'), rustc $(/usr/bin/rustc --version | cut -d' ' -f2), node $(node --version)"

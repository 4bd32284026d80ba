#!/bin/sh
# Installs the gateway release binary for this machine (docs/release.md, "Install script"):
#   GATEWAY_DOWNLOAD_URL=https://example.com/gateway/0.1.0 sh install.sh
# GATEWAY_DOWNLOAD_URL (required): the folder holding the release files and SHA256SUMS (http, https, file).
# GATEWAY_INSTALL_DIR: where `gateway` goes (default ~/.local/bin).
# GATEWAY_TARGET: a target to install instead of this machine's (e.g. linux-x64-musl).
# The file is checked against SHA256SUMS and run once (--version) before it replaces anything.
set -eu

say() { printf 'gateway install: %s\n' "$*" >&2; }
fail() {
  say "$*"
  exit 1
}

base=${GATEWAY_DOWNLOAD_URL:-}
[ -n "$base" ] || fail "GATEWAY_DOWNLOAD_URL is not set: set it to the address of the folder holding the release files and SHA256SUMS (see docs/release.md)"
base=${base%/}
dir=${GATEWAY_INSTALL_DIR:-${HOME:?HOME is not set}/.local/bin}

# This machine's target, named as the release files are: <os>-<arch>[-musl].
target=${GATEWAY_TARGET:-}
if [ -z "$target" ]; then
  os=$(uname -s)
  arch=$(uname -m)
  case "$arch" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "no release for the CPU \"$arch\" (uname -m): there are builds for x86_64 and arm64 only" ;;
  esac
  case "$os" in
    Linux)
      os=linux
      # Alpine and other musl systems: the glibc build does not start there. Their ldd is musl's; failing
      # that, a system with musl's loader and without glibc's (which a Debian with musl installed has).
      case "$arch" in x64) glibc=/lib64/ld-linux-x86-64.so.2 ;; *) glibc=/lib/ld-linux-aarch64.so.1 ;; esac
      if { ldd --version 2>&1 || true; } | grep -qi musl || { [ ! -e "$glibc" ] && ls /lib/ld-musl-*.so.1 >/dev/null 2>&1; }; then
        arch="$arch-musl"
      fi
      ;;
    Darwin)
      os=darwin
      # An x86_64 shell under Rosetta on Apple silicon: the arm64 build is the native one.
      if [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then arch=arm64; fi
      ;;
    MINGW* | MSYS* | CYGWIN*) fail "on Windows, download gateway-<version>-windows-x64.exe and SHA256SUMS from $base yourself and check it (see docs/release.md)" ;;
    *) fail "no release for the OS \"$os\" (uname -s): there are builds for Linux, macOS (Darwin) and Windows" ;;
  esac
  target="$os-$arch"
fi

if command -v curl >/dev/null 2>&1; then
  download() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  download() { wget -q -O "$2" "$1"; }
else
  fail "neither curl nor wget is installed: install one of them"
fi
if command -v sha256sum >/dev/null 2>&1; then
  digest() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
else
  fail "neither sha256sum nor shasum is installed: cannot check the download"
fi

tmp=$(mktemp -d)
new=""
cleanup() {
  rm -rf "$tmp"
  if [ -n "$new" ]; then rm -f "$new"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

download "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
# The one line for this target: gateway-<version>-<target>, whatever the version.
pattern="^[0-9a-f]{64}  gateway-[^ ]+-$target(\.exe)?\$"
count=$(grep -cE "$pattern" "$tmp/SHA256SUMS" || true)
[ "$count" != 0 ] || fail "no file for $target in $base/SHA256SUMS"
[ "$count" = 1 ] || fail "more than one file for $target in $base/SHA256SUMS"
line=$(grep -E "$pattern" "$tmp/SHA256SUMS")
want=${line%% *}
file=${line##* }

say "downloading $base/$file"
download "$base/$file" "$tmp/$file" || fail "cannot download $base/$file"
got=$(digest "$tmp/$file")
[ "$got" = "$want" ] || fail "checksum mismatch for $file: SHA256SUMS says $want, the download is $got; nothing installed"
say "checksum OK ($file)"

mkdir -p "$dir" || fail "cannot create $dir"
# Beside its final name, so the rename is atomic and a running gateway is not overwritten in place.
new="$dir/.gateway.new.$$"
cp "$tmp/$file" "$new" || fail "cannot write to $dir"
chmod 755 "$new"
version=$("$new" --version 2>&1) || fail "$file does not run on this machine ($version); nothing installed"
mv -f "$new" "$dir/gateway"
new=""
say "installed $version to $dir/gateway"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) say "$dir is not on your PATH; add it (e.g. in ~/.profile): export PATH=\"$dir:\$PATH\"" ;;
esac

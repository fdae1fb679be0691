#!/usr/bin/env bash
# Find a Chromium for the browser tests, or fetch one without root; print its path (stdout), or print
# nothing and say why on stderr. Never fails: the browser tests skip, with that reason, when there is none.
#
#   scripts/find_browser.sh [DIR]     # DIR: where a user-space copy is unpacked (default .venv/chromium)
#
# Order: $TILEWISE_CHROMIUM; chromium, chromium-browser or google-chrome on PATH; a copy unpacked before in
# DIR; as root, Debian's package (apt-get install chromium); as any user, Debian's package unpacked without
# installing it (apt-get download + dpkg-deb -x into DIR: no root needed, but the libraries it links must
# already be on the system). Playwright's own browser download is not used.
set -u
DIR=${1:-.venv/chromium}
found() { echo "$1"; exit 0; }
if [ -n "${TILEWISE_CHROMIUM:-}" ] && [ -x "$TILEWISE_CHROMIUM" ]; then found "$TILEWISE_CHROMIUM"; fi
for b in chromium chromium-browser google-chrome; do
  p=$(command -v "$b" 2>/dev/null) && found "$p"
done
for p in "$DIR/usr/lib/chromium/chromium" "$DIR/usr/bin/chromium"; do
  [ -x "$p" ] && "$p" --version >/dev/null 2>&1 && found "$p"
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests" >&2
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; then
    p=$(command -v chromium) && found "$p"
  fi
fi
if command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
  echo "unpacking Debian's chromium into $DIR (no root)" >&2
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download chromium chromium-common >/dev/null 2>&1); then
    mkdir -p "$DIR"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$DIR"; done
    rm -rf "$tmp"
    p="$DIR/usr/lib/chromium/chromium"
    if [ -x "$p" ] && "$p" --version >/dev/null 2>&1; then found "$p"; fi
    echo "the unpacked chromium does not start (missing system libraries: install chromium's dependencies)" >&2
  else
    rm -rf "$tmp"
    echo "apt-get download chromium failed (no package lists? run apt-get update once as root)" >&2
  fi
fi
echo "no Chromium: set TILEWISE_CHROMIUM=/path/to/chromium, or install chromium; the browser tests will skip" >&2
exit 0

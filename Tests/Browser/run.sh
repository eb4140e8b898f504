#!/usr/bin/env bash
# The browser test: the sign-in page in headless Chromium with a virtual authenticator.
# Expects the debug build (`make test` builds it first) and Debian's chromium and chromium-driver
# (Tools/install-deps.sh test). Selenium lives in a venv under .build/, created or updated only
# when Tests/Browser/requirements.txt changes.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=.build/browser-venv
requirements=Tests/Browser/requirements.txt
if ! cmp -s "$requirements" "$venv/requirements.txt"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

binary="$(swift build --show-bin-path)/portvakt"
[ -x "$binary" ] || { echo "no $binary: run swift build first" >&2; exit 1; }
# SE_OFFLINE: Selenium uses the drivers we name and never downloads one.
SE_OFFLINE=true exec "$venv/bin/python" Tests/Browser/signin_test.py --binary "$binary"

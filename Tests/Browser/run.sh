#!/usr/bin/env bash
# The browser test: the sign-in page in headless Chromium with a virtual authenticator.
# Expects the debug build (`make test` builds it first) and Debian's chromium and chromium-driver
# (Tools/install-deps.sh test). Selenium lives in a venv under .build/, created or updated only
# when Tests/Browser/requirements.txt changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/python-venv.sh

venv=.build/browser-venv
requirements=Tests/Browser/requirements.txt
python_venv "$venv" "$requirements"

binary=$(debug_binary)
# SE_OFFLINE: Selenium uses the drivers we name and never downloads one.
SE_OFFLINE=true exec "$venv/bin/python" Tests/Browser/signin_test.py --binary "$binary"

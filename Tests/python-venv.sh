# Sourced by the Python test runners (Tests/Browser, Tests/Backends, Tests/Contract), from the
# repository root.

# python_venv VENV REQUIREMENTS: a venv at VENV with REQUIREMENTS installed, created or rebuilt
# only when the requirements file changed since it was made.
python_venv() {
  local venv=$1 requirements=$2
  if ! cmp -s "$requirements" "$venv/requirements.txt"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
  fi
}

# debug_binary: the path of the debug build's portvakt; fails when it was not built.
debug_binary() {
  local binary
  binary="$(swift build --show-bin-path)/portvakt"
  [ -x "$binary" ] || { echo "no $binary: run swift build first" >&2; return 1; }
  echo "$binary"
}

#!/usr/bin/env bash
# Set up kisekae on a fresh Debian machine: system packages (Mesa EGL for headless rendering,
# glslang/SPIRV tools for the shader core, Chromium for the HTML report tests), a virtual
# environment in .venv with the package, .venv-numpy-oldest (the oldest NumPy allowed) and
# .venv-blender (the bpy wheel, for the Blender extension tests).
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PKGS="libegl1 libegl-mesa0 libgl1-mesa-dri glslang-tools spirv-tools spirv-cross chromium"
missing=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  echo "bootstrap: installing Debian packages:$missing"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $missing >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e ".[test]" 2>&1 | grep -v "^WARNING: Location" || true
# The Khronos glTF validator (npm) for the glTF round-trip tests.
if ! command -v node >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q nodejs npm >/dev/null
fi
if [ ! -d cache/node/node_modules/gltf-validator ]; then
  npm install --no-audit --no-fund --silent --prefix cache/node gltf-validator@2.0.0-dev.3.10 >/dev/null 2>&1 \
    || echo "bootstrap: warning: could not install gltf-validator (npm); the validator test will say how"
fi
# .venv-numpy-oldest: kisekae with the oldest NumPy that pyproject.toml allows (CI runs a subset of the
# suite in it, and tests/test_numpy_versions.py compares its fix with .venv's).
NUMPY_MIN=$(sed -n 's/.*"numpy>=\([0-9.]*\)".*/\1/p' pyproject.toml)
if [ ! -x .venv-numpy-oldest/bin/python ]; then
  python3 -m venv .venv-numpy-oldest
fi
.venv-numpy-oldest/bin/python -m pip install -q -e ".[test]" "numpy==$NUMPY_MIN" 2>&1 | grep -v "^WARNING: Location" || true
# .venv-blender: headless Blender 5.0 (the bpy wheel; it needs Python 3.11 and brings Blender's NumPy 1.26.4)
# and pytest, nothing of kisekae: the extension tests install kisekae from the extension's own wheels.
PY311=$(command -v python3.11 || true)
if [ -z "$PY311" ] && python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  PY311=python3
fi
if [ -z "$PY311" ]; then
  echo "bootstrap: python3.11 not found; the bpy wheel (Blender 5.0) needs Python 3.11" >&2
  exit 1
fi
if [ ! -x .venv-blender/bin/python ]; then
  "$PY311" -m venv .venv-blender
fi
.venv-blender/bin/python -m pip install -q "bpy==5.0.1" "pytest>=8.0" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import kisekae" && .venv-numpy-oldest/bin/python -c "import kisekae" \
  && .venv-blender/bin/python -c "import bpy" && echo "bootstrap: ready (.venv, .venv-numpy-oldest, .venv-blender)"

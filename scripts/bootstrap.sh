#!/usr/bin/env bash
# Set up kisekae on a fresh Debian machine: system packages (Mesa EGL for headless rendering,
# glslang/SPIRV tools for the shader core, Chromium for the HTML report tests), a virtual
# environment in .venv, and the package.
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
.venv/bin/python -c "import kisekae" && echo "bootstrap: ready (.venv)"

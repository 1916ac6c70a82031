#!/bin/sh
# The image's install steps: the Dockerfile's build stage runs exactly this script, and the
# test suite runs it too (tests/test_deploy.py), so a broken step fails the build here.
#
#   scripts/docker-install.sh [SRC] [VENV]
#
# Creates the virtual environment VENV (default /opt/venv) unless it exists, installs the
# adapter from the source tree SRC (default /src) into it as a regular, non-editable package
# with every catalog client (the extra `[all]`: the image serves any backend), at the versions
# the test suite last passed with (SRC/lock/python.txt, as pip constraints), then checks the
# install: rest.yaml is a real file inside the installed package, every operation loads from
# it, the `lance-adapter` entry point and the health check run, and every backend imports.
#
#   PYTHON     interpreter that creates the environment (default: python3)
#   PIP_FLAGS  extra `pip install` flags (the tests use --no-deps --no-build-isolation)
set -eu

SRC=$(cd "${1:-/src}" && pwd)  # absolute: pip reads a bare name as a requirement
VENV=${2:-/opt/venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi

# PIP_CONSTRAINT, not -c: pip applies it to the build's own isolated environment too.
# shellcheck disable=SC2086  # PIP_FLAGS holds several flags on purpose
PIP_CONSTRAINT="$SRC/lock/python.txt" "$VENV/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --quiet \
    ${PIP_FLAGS:-} "$SRC[all]"

# Check from outside the source tree, so the installed package is the one imported.
cd /
"$VENV/bin/python" - <<'CHECK'
import app.spec

spec = app.spec.SPEC_PATH
if spec.is_symlink() or not spec.is_file():
    raise SystemExit(f"install check: {spec} must be a regular file in the installed package")
if "site-packages" not in str(spec):
    raise SystemExit(f"install check: app was imported from {spec.parent}, not the install")
operations = app.spec.load_operations()
if not operations:
    raise SystemExit("install check: rest.yaml holds no operation")
print(f"install check: {len(operations)} operations from {spec}")
CHECK
"$VENV/bin/lance-adapter" serve --help >/dev/null
"$VENV/bin/python" - <<'BACKENDS'
import app.docs, app.container_probe, app.server
from backends import IMPLS, resolve_impl

for impl in IMPLS:
    resolve_impl(impl)  # imports the backend's module and its client libraries
print(f"install check: every backend imports ({', '.join(IMPLS)})")
BACKENDS
echo "install check: lance-adapter installed in $VENV"

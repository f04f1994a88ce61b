#!/usr/bin/env bash
# Builds the teardown demo (examples/demo) with the dev preset and runs it.
# Installs missing Debian packages first. Extra arguments are passed to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev --target teardown_demo
exec build/dev/examples/demo/teardown_demo "$@"

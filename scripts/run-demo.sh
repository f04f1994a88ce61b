#!/usr/bin/env bash
# Builds the dev preset and runs the teardown demo (examples/demo).
# Installs missing Debian packages first. Extra arguments are passed to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev

demo=build/dev/examples/demo/teardown_demo
if [[ ! -x "$demo" ]]; then
  echo "run-demo: $demo was not built." >&2
  echo "run-demo: examples/demo (target teardown_demo) is missing or failed to build; see the output above." >&2
  exit 1
fi
exec "$demo" "$@"

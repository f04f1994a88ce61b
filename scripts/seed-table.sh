#!/usr/bin/env bash
# The project's main job: install what is missing, build netsim, replay every seed experiment in
# legacy and batched mode, and print the Markdown seed table (examples/netdev/README.md explains it).
#   bash scripts/seed-table.sh            # full sizes (about a minute)
#   bash scripts/seed-table.sh --short    # small sizes (seconds), for a quick check
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset dev >/dev/null
cmake --build --preset dev --target netsim

netsim=build/dev/examples/netdev/netsim
if [[ ! -x "$netsim" ]]; then
  echo "seed-table: $netsim was not built; see the output above." >&2
  exit 1
fi
exec "$netsim" seed-table --scripts examples/netdev/scripts "$@"

#!/usr/bin/env bash
# Builds rcubatch and runs every test (the dev preset: RelWithDebInfo, tests and examples).
# Installs missing Debian packages first. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev

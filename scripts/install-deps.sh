#!/usr/bin/env bash
# Installs the Debian (bookworm) packages rcubatch needs to build, test and benchmark.
# Idempotent: only missing packages are installed, and `apt-get update` runs only then.
#
#   scripts/install-deps.sh                # build, test and bench dependencies
#   scripts/install-deps.sh --bench-peers  # also the peer libraries and plotting tools of bench/
#   scripts/install-deps.sh --trace        # also bpftrace, for scripts/rcubatch-trace (not needed by the tests)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config g++
  clang libclang-rt-14-dev  # clang 14's sanitizer runtimes live in libclang-rt-14-dev
  liburcu-dev libboost-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  doxygen  # the API reference (cmake --build <build> --target docs)
  systemtap-sdt-dev  # <sys/sdt.h>: the static probes compile in where it is (docs/observability.md)
  spin  # the model checker of formal-model/ (ctest -L model)
)
bench_peer_packages=(libcds-dev libdpdk-dev python3-matplotlib)
trace_packages=(bpftrace)  # scripts/rcubatch-trace (it falls back to perf, which it does not install)

usage() {
  echo "usage: $0 [--bench-peers] [--trace]" >&2
}

for arg in "$@"; do
  case "$arg" in
    --bench-peers) packages+=("${bench_peer_packages[@]}") ;;
    --trace) packages+=("${trace_packages[@]}") ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$0: unknown argument '$arg'" >&2; usage; exit 2 ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "$0: needs a Debian-based system (dpkg-query and apt-get); install these by hand:" >&2
  echo "  ${packages[*]}" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "all dependencies present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "$0: not root and sudo is not available; as root run:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

echo "installing: ${missing[*]}"
# env, not export: sudo resets the environment. The lock timeout waits for another apt/dpkg run
# (unattended-upgrades, a parallel job) instead of failing at once.
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
"${apt[@]}" update
"${apt[@]}" install -y --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   ./build.sh run    install what is missing, build, run the main job (`tandem job`) on bundled defaults
#   ./build.sh test   install what is missing, build, run the whole test suite
# Extra arguments after `run` are passed to `tandem` instead of the default job.
set -euo pipefail
cd "$(dirname "$0")"

mode="${1:-run}"
shift || true

# 1. Dependencies: Debian packages only. Install the missing ones (as root, or through sudo).
packages=(build-essential cmake ninja-build pkg-config git
          libsimgrid-dev libboost-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev
          libgoogle-perftools-dev  # tcmalloc: large simulations allocate millions of small objects
          libopenmpi-dev openmpi-bin  # MPI: tandem search --mpi, multi-process CUDA runs
          chromium)  # chromium: the report test renders the HTML report headless
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 2. Build (CUDA parts only when nvcc is found).
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

# 3. The job.
case "$mode" in
  run)
    if [ $# -gt 0 ]; then
      exec ./build/tandem "$@"
    fi
    # The main job: search a modeled heterogeneous cluster, then calibrate, search, run and
    # compare on this machine; ends by printing the reports' paths (cli/job_command.hpp).
    exec ./build/tandem job -o tandem-job
    ;;
  test)
    cd build
    exec ctest --output-on-failure -j "$jobs" --timeout 600
    ;;
  *)
    echo "usage: ./build.sh [run|test] [tandem arguments...]" >&2
    exit 2
    ;;
esac

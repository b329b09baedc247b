#!/usr/bin/env bash
# Fuzzing Tandem's input readers with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
# Opt-in (not part of build.sh or CI): needs clang, installed here if missing (Debian packages).
#
#   fuzz/run.sh                          every reader, 1,000,000 executions each
#   fuzz/run.sh scenario 200000          one reader, that many executions
#   fuzz/run.sh all 200000               every reader, that many executions each
#   fuzz/run.sh scenario,trace           those readers, built once, one after the other
#   fuzz/run.sh merge [reader|all]       re-minimize the stored corpus with what the runs found
#   fuzz/run.sh reproduce reader FILE    run one input through a harness (a crash, a regression)
#   FUZZ_MAX_SECONDS=1200 fuzz/run.sh device   stop a reader's run after that long (or its executions)
#
# Readers: scenario search cluster device trace checkpoint convergence (fuzz/README.md says what each reads).
# Builds into build-fuzz/. A run reads the stored corpus fuzz/corpus/<reader>/ (read-only) and
# writes what it finds to build-fuzz/corpus/<reader>/; crashes, timeouts and out-of-memory inputs
# go to build-fuzz/artifacts/<reader>/. Limits per input: 10 s, 1 GB (the issue's promise).
set -euo pipefail
cd "$(dirname "$0")/.."

readers=(scenario search cluster device trace checkpoint convergence)
build=build-fuzz
mode="${1:-all}"

# Inputs longer than these add nothing the bundled files do not already exercise.
max_len() {
  case "$1" in
    trace|checkpoint) echo 65536 ;;
    *) echo 16384 ;;
  esac
}

ensure_clang() {
  if command -v clang++ >/dev/null && ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    return
  fi
  echo "== installing clang and its sanitizer runtimes" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang
}

build_harnesses() {
  ensure_clang
  local flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
  # The standard libFuzzer macro: readers may skip checks no mutation can pass (a checksum).
  flags+=" -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS="$flags" -DTANDEM_BUILD_FUZZERS=ON -DTANDEM_BUILD_TESTS=OFF -DTANDEM_ENABLE_CUDA=OFF \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
  local targets=()
  for r in "$@"; do targets+=("fuzz_$r"); done
  cmake --build "$build" -j "${FUZZ_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}"
}

# Tokens worth splicing into inputs: the keys and the enumerated values of the stored corpus (grep -a:
# the corpus holds mutated, partly binary inputs, on which plain grep prints nothing).
make_dictionary() {
  local reader=$1 dict="$build/dict/$1.dict"
  mkdir -p "$build/dict"
  : >"$dict"
  # A checkpoint is binary: its magic, and the keys of its JSON header (exec/cpu/checkpoint.hpp).
  if [ "$reader" = checkpoint ]; then
    printf '"%s"\n' TANDEMCK strategy world_size next_iteration seed sequences_per_iteration tensors >"$dict"
    return
  fi
  cat fuzz/corpus/"$reader"/* 2>/dev/null |
    grep -aoE '"?[A-Za-z_][A-Za-z0-9_.-]{1,40}"?[[:space:]]*:' | sed -E 's/[[:space:]]*:$//; s/"//g' |
    sort -u | head -400 | while read -r token; do printf '"%s"\n' "$token"; done >"$dict"
}

fuzz_one() {
  local reader=$1 runs=$2
  mkdir -p "$build/corpus/$reader" "$build/artifacts/$reader"
  make_dictionary "$reader"
  echo "== fuzzing $reader: $runs executions" >&2
  local start=$SECONDS status=0
  # One input may allocate at most 1 GB (-malloc_limit_mb, the promise); the process as a whole
  # gets 2 GB: over a million executions its RSS grows with what ASan's allocator keeps and its
  # stack depot (measured: the cluster reader at 828k executions, 1,025 MB RSS with 27 MB live
  # heap; the input it stopped at, alone, 34 MB), which is no input's doing.
  "$build/fuzz/fuzz_$reader" -runs="$runs" ${FUZZ_MAX_SECONDS:+-max_total_time=$FUZZ_MAX_SECONDS} \
    -max_len="$(max_len "$reader")" -malloc_limit_mb=1024 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -dict="$build/dict/$reader.dict" \
    -artifact_prefix="$build/artifacts/$reader/" "$build/corpus/$reader" "fuzz/corpus/$reader" \
    2>"$build/$reader.log" || status=$?
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$build/$reader.log" | sed "s/^/   $reader /" >&2 || true
  echo "   $reader: exit $status after $((SECONDS - start)) s (log: $build/$reader.log)" >&2
  return $status
}

merge_one() {
  local reader=$1 fresh
  fresh=$(mktemp -d)
  "$build/fuzz/fuzz_$reader" -merge=1 -max_len="$(max_len "$reader")" -rss_limit_mb=1024 -timeout=10 \
    "$fresh" "fuzz/corpus/$reader" "$build/corpus/$reader" 2>"$build/$reader.merge.log"
  rm -rf "fuzz/corpus/$reader"
  mv "$fresh" "fuzz/corpus/$reader"
  chmod 755 "fuzz/corpus/$reader"
  echo "   $reader: $(ls "fuzz/corpus/$reader" | wc -l) inputs, $(du -sh "fuzz/corpus/$reader" | cut -f1)" >&2
}

# "all", one reader, or a comma-separated list ("scenario,trace"): built once, run one after the other.
pick() {
  if [ "${1:-all}" = all ]; then echo "${readers[@]}"; else echo "${1//,/ }"; fi
}

case "$mode" in
  merge)
    chosen=$(pick "${2:-all}")
    build_harnesses $chosen
    for r in $chosen; do merge_one "$r"; done
    ;;
  reproduce)
    build_harnesses "$2"
    exec "$build/fuzz/fuzz_$2" -rss_limit_mb=1024 -timeout=10 "$3"
    ;;
  *)
    chosen=$(pick "$mode")
    runs="${2:-1000000}"
    build_harnesses $chosen
    failed=()
    for r in $chosen; do fuzz_one "$r" "$runs" || failed+=("$r"); done
    if [ ${#failed[@]} -gt 0 ]; then
      echo "== findings in: ${failed[*]} (inputs in $build/artifacts/<reader>/; reproduce with fuzz/run.sh reproduce READER FILE)" >&2
      exit 1
    fi
    echo "== no crash, hang or leak in: $chosen" >&2
    ;;
esac

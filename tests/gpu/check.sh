#!/usr/bin/env bash
# The CUDA backend's GPU check, for a person with one NVIDIA GPU (an H200 is the target): about
# 6.5 minutes on an H200 (CHECK_BUDGET_S caps it), every result in one folder (./gpu-results, or
# $OUT, or the first argument). In order of value, so that a short budget keeps the first:
#   1. GPU tests: every CUDA kernel vs the CPU reference (fp32; bf16 looser), k training steps of
#      a small GPT vs the CPU backend, bf16 vs fp32 loss curve, trace op ids, allocator, the
#      calibration's measurement of a real step.
#   2. Simulate-vs-run: `tandem run --backend cuda` of GPT-2 124M and 1.5B beside `tandem simulate`
#      of the same scenarios; then `tandem calibrate --backend cuda --quick` (the GPU's fitted
#      profile, its raw measurements, with 2+ GPUs its NCCL link) and the 124M step simulated on it.
#   3. Benchmarks: training steps of GPT-2 124M and 1.5B with MFU; GEMM vs cuBLAS, and cuBLAS vs
#      the simulator's GEMM model over GPT layer shapes; calibration sweeps (GEMM sizes, copies).
#   4. PyTorch eager on the same models and batches (when PyTorch is installed): tokens/s.
#   5. summary.txt: the numbers together (summarize.py).
# Runs from a build tree (TANDEM_BIN_DIR, default build-dev/ or build/ next to tests/) or from
# the bundle of make_bundle.sh (its launcher sets TANDEM_BIN_DIR and TANDEM_DATA_DIR).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-./gpu-results}}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ -z "${TANDEM_BIN_DIR:-}" ]; then
  for d in "$here/../../build-dev" "$here/../../build"; do [ -x "$d/tandem" ] && TANDEM_BIN_DIR="$(cd "$d" && pwd)" && break; done
fi
bin="${TANDEM_BIN_DIR:?no tandem build found: set TANDEM_BIN_DIR}"
# shellcheck source=cuda_libs.sh
source "$here/cuda_libs.sh"
log="$out/check.log"
: > "$log"
# CHECK_BUDGET_S caps the whole check (a leased GPU's minutes are few): a step gets at most what
# is left of it, and a step with under 10 s left is skipped, saying so.
budget="${CHECK_BUDGET_S:-100000}"
step() {  # step NAME TIMEOUT_S COMMAND... : stdout to $out/NAME.out, status to the log
  local name="$1" limit="$2"; shift 2
  local left=$((budget - SECONDS))
  if [ "$left" -lt 10 ]; then echo "   $name: skipped, the check's budget (${budget} s) is spent" | tee -a "$log"; return 0; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$log"
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.out" 2> "$out/$name.err"
  local rc=$?
  echo "   $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$log"
  return 0
}

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  echo "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-}"
  nvidia-smi 2>&1 || echo "nvidia-smi not available"
  echo "--- shared libraries of tandem:"
  ldd "$bin/tandem" 2>&1
} > "$out/environment.txt"
if ldd "$bin/tandem" | grep -q "not found"; then
  echo "MISSING LIBRARIES (see environment.txt):" | tee -a "$log"
  ldd "$bin/tandem" | grep "not found" | tee -a "$log"
fi

step gpu-tests 150 "$bin/tandem_tests" --gtest_filter='Cuda*:CachingAllocator*' --gtest_output="xml:$out/gpu-tests.xml"
step run-tiny-fp32 30 "$bin/tandem" run gpt-tiny-h200-fp32 --backend cuda --iterations 5 --json "$out/run-tiny-fp32-cuda.json"
step run-124m 90 "$bin/tandem" run gpt2-124m-h200 --backend cuda --iterations 5 --warmup 2 \
  --json "$out/run-124m.json" --trace "$out/run-124m-trace.json" --chrome-trace "$out/run-124m-timeline.json"
step simulate-124m 60 "$bin/tandem" simulate gpt2-124m-h200 --json "$out/simulate-124m.json" --trace "$out/simulate-124m-trace.json"
step run-1.5b 90 "$bin/tandem" run gpt2-1.5b-h200 --backend cuda --iterations 3 --warmup 1 \
  --json "$out/run-1.5b.json" --trace "$out/run-1.5b-trace.json"
step simulate-1.5b 60 "$bin/tandem" simulate gpt2-1.5b-h200 --json "$out/simulate-1.5b.json" --trace "$out/simulate-1.5b-trace.json"
step calibrate-cuda 150 "$bin/tandem" calibrate --backend cuda --quick -o "$out/gpu-calibrated.yaml" \
  --measurements-out "$out/gpu-calibration-measurements.csv" \
  --cluster-out "$out/gpu-calibrated-cluster.yaml"
# The 124M step again on the profile just calibrated: the simulator's prediction of this backend.
if [ -s "$out/gpu-calibrated.yaml" ]; then
  printf '%s\n' "name: here-calibrated" "node_groups:" "  - name: gpu" "    device: $out/gpu-calibrated.yaml" \
    "    nodes: 1" "    devices_per_node: 1" "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }" \
    > "$out/here-calibrated-cluster.yaml"
  printf '%s\n' "name: gpt2-124m-here-calibrated" "model: gpt2-124m" "cluster: $out/here-calibrated-cluster.yaml" \
    "training: {global_batch_size: 16, micro_batch_size: 16, seq_length: 1024, precision: bf16}" \
    "strategy: {type: data_parallel, data_parallel_size: 1}" > "$out/gpt2-124m-here-calibrated.yaml"
  step simulate-124m-calibrated 60 "$bin/tandem" simulate "$out/gpt2-124m-here-calibrated.yaml" \
    --json "$out/simulate-124m-calibrated.json" --trace "$out/simulate-124m-calibrated-trace.json"
fi
step training-bench 150 "$bin/cuda_training_bench" --benchmark_format=json --benchmark_out="$out/training-bench.json"
step gemm-bench 90 "$bin/cuda_gemm_bench" --benchmark_format=json --benchmark_out="$out/gemm-bench.json"
step calibration-bench 60 "$bin/cuda_calibration_bench" --benchmark_format=json --benchmark_out="$out/calibration-bench.json"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  step pytorch-124m 60 python3 "$here/pytorch_reference.py" --model gpt2-124m --micro-batch 16 --steps 5 --json "$out/pytorch-124m.json" \
    --trace "$out/pytorch-124m-trace.json"
  [ -f "$out/pytorch-124m-trace.json" ] && gzip -f "$out/pytorch-124m-trace.json"
  step pytorch-1.5b 90 python3 "$here/pytorch_reference.py" --model gpt2-1.5b --micro-batch 2 --accumulation 4 --steps 3 --json "$out/pytorch-1.5b.json"
else
  echo "   PyTorch with CUDA not found: no side-by-side reference" | tee -a "$log"
fi
python3 "$here/summarize.py" "$out" > "$out/summary.txt" 2>&1 || echo "summarize.py failed" | tee -a "$log"
cat "$out/summary.txt"
echo "results in $out"

#!/usr/bin/env bash
# Measures loss against steps for each gradient codec (strategies/compression/), local SGD and DiLoCo on the CPU
# backend: gpt-tiny (scenarios/gpt-tiny-localhost.yaml: data parallel over 2 CPU ranks, byte-level
# language modelling on the generated corpus, seed 1234), the same global batch and AdamW settings
# for every codec, and writes analysis/data/compression_loss_vs_steps.csv (one column per codec,
# written atomically). Usage: analysis/data/compression_loss_curves.sh BUILD_DIR [STEPS]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [STEPS]}
steps=${2:-100}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The strategy line each variant adds: a codec, or local SGD's averaging period.
knobs=("gradient_compression: none" "gradient_compression: fp16_compress" "gradient_compression: int8"
       "gradient_compression: onebit" "gradient_compression: {type: topk, topk_ratio: 0.01}"
       "gradient_compression: {type: topk, topk_ratio: 0.1}"
       "gradient_compression: {type: powerSGD, matrix_approximation_rank: 1}"
       "gradient_compression: {type: powerSGD, matrix_approximation_rank: 4}"
       "gradient_compression: {type: onebit, use_error_feedback: false}"
       "local_sgd_steps: 4" "local_sgd_steps: 16" "local_sgd_steps: 16\n  outer_lr: 0.7\n  outer_momentum: 0.9")
names=("none" "fp16" "int8" "onebit" "topk_0.01" "topk_0.1" "powerSGD_r1" "powerSGD_r4" "onebit_no_ef"
       "local_sgd_4" "local_sgd_16" "diloco_16")
for i in "${!knobs[@]}"; do
  { cat "$root/scenarios/gpt-tiny-localhost.yaml"; echo -e "  ${knobs[$i]}"; } > "$work/${names[$i]}.yaml"
  "$build/tandem" run "$work/${names[$i]}.yaml" --backend cpu --iterations "$steps" --json "$work/${names[$i]}.json" > /dev/null
done
python3 - "$work" "$here/compression_loss_vs_steps.csv" "${names[@]}" <<'PY'
import json, os, sys
work, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
losses = {n: [it["loss"] for it in json.load(open(os.path.join(work, n + ".json")))["iterations"]] for n in names}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    f.write("step," + ",".join(names) + "\n")
    for s in range(len(losses[names[0]])):
        f.write(str(s) + "," + ",".join(f"{losses[n][s]:.5f}" for n in names) + "\n")
os.replace(tmp, out)
for n in names:
    print(f"{n:14s} loss {losses[n][0]:.4f} -> {losses[n][-1]:.4f}")
PY

#!/usr/bin/env bash
# Measures loss against steps for each gradient codec (strategies/compression/) on the CPU
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

codecs=("none" "fp16_compress" "int8" "onebit" "{type: topk, topk_ratio: 0.01}" "{type: topk, topk_ratio: 0.1}"
        "{type: powerSGD, matrix_approximation_rank: 1}" "{type: powerSGD, matrix_approximation_rank: 4}"
        "{type: onebit, use_error_feedback: false}")
names=("none" "fp16" "int8" "onebit" "topk_0.01" "topk_0.1" "powerSGD_r1" "powerSGD_r4" "onebit_no_ef")
for i in "${!codecs[@]}"; do
  { cat "$root/scenarios/gpt-tiny-localhost.yaml"; echo "  gradient_compression: ${codecs[$i]}"; } > "$work/${names[$i]}.yaml"
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

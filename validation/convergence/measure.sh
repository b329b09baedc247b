#!/usr/bin/env bash
# Convergence, measured (issue 16): the loss per step of the communication-efficient strategies
# against synchronous data parallelism, trained for real on the CPU backend on a real text (the
# GPL-3 licence every Debian machine ships, byte-level), and the time to a target loss on a
# modeled GPU cluster = the steps to that loss MEASURED here x the step time SIMULATED there for
# the same strategy (a proxy: the small model's steps stand for the large model's, stated as such).
#
#   validation/convergence/measure.sh [TANDEM] [OUT.json]
#
# Writes OUT.json (default validation/convergence/gpt-tiny-gpl3.json) atomically and prints a
# table. Needs only bash and awk beside tandem. About a minute on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tandem="${1:-$here/../../build/tandem}"
out="${2:-$here/gpt-tiny-gpl3.json}"
corpus="${CORPUS:-/usr/share/common-licenses/GPL-3}"
steps="${STEPS:-80}"
target="${TARGET_LOSS:-3.6}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# name | strategy lines for gpt-tiny (4 workers) | the same strategy for GPT-2 1.5B on 16 H100 over 100 GbE
variants=(
  "synchronous|data_parallel_size: 4|data_parallel_size: 16"
  "int8|data_parallel_size: 4, gradient_compression: int8|data_parallel_size: 16, gradient_compression: int8"
  "onebit|data_parallel_size: 4, gradient_compression: onebit|data_parallel_size: 16, gradient_compression: onebit"
  "local_sgd_4|data_parallel_size: 4, local_sgd_steps: 4|data_parallel_size: 16, local_sgd_steps: 4"
  "ps_stale_0|data_parallel_size: 4, parameter_servers: 1|data_parallel_size: 8, parameter_servers: 8"
  "ps_stale_1|data_parallel_size: 4, parameter_servers: 1, parameter_server_staleness: 1|data_parallel_size: 8, parameter_servers: 8, parameter_server_staleness: 1"
  "ps_stale_3|data_parallel_size: 4, parameter_servers: 1, parameter_server_staleness: 3|data_parallel_size: 8, parameter_servers: 8, parameter_server_staleness: 3"
  "ps_async|data_parallel_size: 4, parameter_servers: 1, parameter_server_asynchronous: true|data_parallel_size: 8, parameter_servers: 8, parameter_server_asynchronous: true"
)

# The CPU backend runs on a cluster of CPU cores: this machine's, with room for 4 workers and a
# server (ranks beyond the cores take turns on them: the losses do not depend on it).
sed -e 's/^name: localhost/name: localhost-8/' -e 's/devices_per_node: 2/devices_per_node: 8/' \
  "$here/../../platforms/clusters/localhost.yaml" >"$work/localhost-8.yaml"

json="{\n  \"corpus\": \"$corpus\",\n  \"model\": \"gpt-tiny, global batch 16, micro-batch 2, seq 32, fp32, lr 1e-3\",\n"
json+="  \"step_time_on\": \"gpt2-1.5b, global batch 16, seq 1024, bf16, h100-64-ethernet-100g (simulated)\",\n"
json+="  \"target_loss\": $target,\n  \"variants\": ["
printf '%-12s %10s %10s %14s %12s %14s\n' variant "loss@$steps" "steps->$target" "step (sim)" "to target" "note"
first=1
for v in "${variants[@]}"; do
  IFS='|' read -r name tiny big <<<"$v"
  # 1. Train for real: the loss per step.
  cat >"$work/$name.yaml" <<YAML
name: convergence-$name
model: gpt-tiny
cluster: $work/localhost-8.yaml
training: {global_batch_size: 16, micro_batch_size: 2, seq_length: 32, precision: fp32, lr: 0.001}
strategy: {type: data_parallel, $tiny}
YAML
  "$tandem" run "$work/$name.yaml" --iterations "$steps" --corpus "$corpus" >"$work/$name.run"
  losses=$(awk '$1 == "iter" { printf "%s%s", sep, $4; sep = ", " }' "$work/$name.run")
  # Steps to the target: the first step whose mean over it and the 4 before is at or below it.
  reach=$(awk -v t="$target" '$1 == "iter" { n++; l[n] = $4; if (n >= 5 && !found) { s = 0; for (i = n - 4; i <= n; i++) s += l[i]; if (s / 5 <= t) { found = n } } }
                              END { print found ? found : -1 }' "$work/$name.run")
  last=$(awk '$1 == "iter" { l = $4 } END { print l }' "$work/$name.run")
  # 2. Simulate the large model's step with the same strategy.
  cat >"$work/$name-big.yaml" <<YAML
name: convergence-$name-big
model: gpt2-1.5b
cluster: h100-64-ethernet-100g
training: {global_batch_size: 16, micro_batch_size: 1, seq_length: 1024, precision: bf16}
strategy: {type: data_parallel, $big}
YAML
  step=$("$tandem" simulate "$work/$name-big.yaml" | awk '$1 == "iteration" { v = $2; u = $3; print (u == "ms" ? v / 1000 : u == "us" ? v / 1e6 : v); exit }')
  to_target=$(awk -v r="$reach" -v s="$step" 'BEGIN { if (r < 0) print "-1"; else printf "%.4g", r * s }')
  note=$([ "$reach" -lt 0 ] && echo "not reached" || echo "")
  printf '%-12s %10s %10s %12.4f s %10s s %14s\n' "$name" "$last" "$reach" "$step" "$to_target" "$note"
  [ $first -eq 1 ] || json+=","
  first=0
  json+="\n    {\"name\": \"$name\", \"strategy\": \"$tiny\", \"losses\": [$losses], \"steps_to_target\": $reach,"
  json+=" \"simulated_step_s\": $step, \"time_to_target_s\": $to_target}"
done
json+="\n  ]\n}\n"
printf "%b" "$json" >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"

#!/usr/bin/env bash
# The GPU check on a leased machine that hands back only a few files from one folder (the
# project's `device` tool: at most 8 files from $OUT). Here, with nvcc: build with CUDA, then
#   tests/gpu/make_bundle.sh build .gpubundle        # .gpubundle/ ignored by git; the archive travels
# and on the leased machine, from the repository root:
#   tests/gpu/leased_check.sh .gpubundle/tandem-gpu-bundle.tar.xz [BUDGET_S (default 390)]
# It unpacks the bundle, runs check.sh within the budget (CHECK_BUDGET_S: each step gets at most
# what is left) and leaves in $OUT: summary.txt, check.log, gpu-calibrated.yaml,
# gpu-calibration-measurements.csv, results.tgz (every result but the traces) and traces.tgz.
# 390 s plus a minute of start leaves a second run room in a 15-minute lease.
set -uo pipefail
archive="${1:?usage: tests/gpu/leased_check.sh BUNDLE_ARCHIVE [BUDGET_S]}"
out="${OUT:?OUT must name the folder whose files come back}"
work="$(mktemp -d)"
tar -xf "$archive" -C "$work" || { echo "cannot unpack $archive" >&2; exit 1; }
CHECK_BUDGET_S="${2:-390}" "$work/tandem-gpu-bundle/check.sh" "$work/results" 2>&1 | tail -80
cd "$work/results" || exit 1
tar -czf "$out/results.tgz" --exclude='*trace*.json' --exclude='*trace*.json.gz' --exclude='*timeline*' .
tar -czf "$out/traces.tgz" ./*trace*.json ./*trace*.json.gz ./*timeline*.json 2>/dev/null
cp summary.txt check.log gpu-calibrated.yaml gpu-calibration-measurements.csv "$out/" 2>/dev/null
ls -l "$out"

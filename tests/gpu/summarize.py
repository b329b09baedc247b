#!/usr/bin/env python3
"""Reads the GPU check's results folder (tests/gpu/check.sh) and prints the numbers side by side:
GPU test verdicts, GEMM throughput vs cuBLAS, training throughput and MFU vs PyTorch eager,
calibration fractions of peak, the fitted GPU profile, and the simulator's predicted vs the
measured iteration time."""
import gzip, json, os, sys, xml.etree.ElementTree as ET

out = sys.argv[1]


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bench_rows(name):
    data = load(name)
    return [] if not data else [b for b in data.get("benchmarks", []) if not b.get("error_occurred")]


print("== GPU tests")
try:
    root = ET.parse(os.path.join(out, "gpu-tests.xml")).getroot()
    print(f"tests {root.get('tests')}  failures {root.get('failures')}  errors {root.get('errors')}  "
          f"skipped {root.get('skipped', root.get('disabled'))}")
    for case in root.iter("testcase"):
        verdict = "FAIL" if case.find("failure") is not None else "skip" if case.find("skipped") is not None else "ok  "
        err = next((p.get("value") for p in case.iter("property") if p.get("name") == "max_rel_error"), "")
        print(f"  {verdict} {case.get('classname')}.{case.get('name')} {err}")
except (OSError, ET.ParseError):
    print("  no gpu-tests.xml")

print("== GEMM vs cuBLAS (bf16)")
model_rows = []
for b in bench_rows("gemm-bench.json"):
    if "model_tflops" in b:
        model_rows.append(b)
        continue
    print(f"  {b['name']:<50} {b['tflops']:7.1f} TFLOP/s  cuBLAS {b['reference_tflops']:7.1f}  ratio {b['ratio']:.3f}")
print("== cuBLAS bf16 vs the simulator's GEMM model (random operands)")
for b in model_rows:
    shape = "x".join(b["name"].split("/")[1:4])
    print(f"  {shape:<20} cuBLAS {b['cublas_tflops']:7.1f}  model {b['model_tflops']:7.1f} TFLOP/s  "
          f"model error {100 * b['model_error']:+6.1f}%  ({b.get('label', '')})")
if model_rows:
    errs = [abs(b["model_error"]) for b in model_rows]
    print(f"  mean |error| {100 * sum(errs) / len(errs):.1f}%  max {100 * max(errs):.1f}%  over {len(errs)} shapes")

print("== training step (one GPU) vs PyTorch eager")
torch_ref = {"gpt2_124m": load("pytorch-124m.json"), "gpt2_1_5b": load("pytorch-1.5b.json")}
for b in bench_rows("training-bench.json"):
    key = b["name"].split("/")[1] if "/" in b["name"] else b["name"]
    ref = torch_ref.get(key)
    line = f"  {key:<10} tandem {b['tokens_per_s']:10.0f} tokens/s  MFU {b['mfu']:.3f}  step {b['step_s']:.4f} s"
    if ref:
        line += f" | PyTorch {ref['tokens_per_s']:10.0f} tokens/s  MFU {ref['mfu']:.3f}  ratio {b['tokens_per_s'] / ref['tokens_per_s']:.3f}"
    print(line)


# A CUDA kernel's family, from its name (cuBLAS's Hopper kernels are sm90_xmma_* or nvjet_*).
KERNEL_FAMILIES = (("attention", ("flash", "fmha", "attention", "sdpa", "cudnn")),
                   ("gemm", ("gemm", "xmma", "nvjet", "cutlass", "cublas", "wgmma")),
                   ("optimizer", ("multi_tensor", "adam", "foreach")),
                   ("norm", ("layer_norm", "layernorm", "rms")),
                   ("loss", ("softmax", "nll", "cross_entropy")),
                   ("memory", ("memcpy", "memset", "copy", "cat")))


def kernel_family(name):
    low = name.lower()
    return next((family for family, keys in KERNEL_FAMILIES if any(k in low for k in keys)), "elementwise")


def kernel_breakdown(path):
    """Per kernel family, the GPU time of one profiled step (a torch.profiler Chrome trace), the
    span from its first kernel to its last, and the time no kernel ran within it."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    kernels = sorted((float(e["ts"]), float(e["dur"]), e.get("name", "")) for e in events
                     if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    if not kernels:
        return None
    families, busy, end = {}, 0.0, kernels[0][0]
    for ts, dur, name in kernels:
        families[kernel_family(name)] = families.get(kernel_family(name), 0.0) + dur
        busy += max(0.0, ts + dur - max(ts, end))  # the union of the kernels' intervals
        end = max(end, ts + dur)
    span = end - kernels[0][0]
    return {"kernels": len(kernels), "span_us": span, "busy_us": busy, "families_us": families}


print("== PyTorch eager, one profiled step kernel by kernel (gpt2-124m)")
trace = next((os.path.join(out, n) for n in ("pytorch-124m-trace.json.gz", "pytorch-124m-trace.json")
              if os.path.exists(os.path.join(out, n))), None)
try:
    breakdown = kernel_breakdown(trace) if trace else None
except (OSError, ValueError, KeyError, TypeError) as e:
    breakdown = None
    print(f"  unreadable {trace}: {e}")
if breakdown:
    span = breakdown["span_us"]
    print(f"  {breakdown['kernels']} kernels over {span / 1e3:.2f} ms; GPU busy {breakdown['busy_us'] / 1e3:.2f} ms, "
          f"idle between kernels {(span - breakdown['busy_us']) / 1e3:.2f} ms")
    for family, us in sorted(breakdown["families_us"].items(), key=lambda kv: -kv[1]):
        print(f"  {family:<12} {us / 1e3:8.2f} ms  {100 * us / span:5.1f}% of the span")
else:
    print("  no pytorch-124m-trace.json(.gz)")

print("== calibration sweeps")
for b in bench_rows("calibration-bench.json"):
    val = b.get("tflops", b.get("gb_per_s"))
    print(f"  {b['name']:<50} {val:9.1f}  fraction of peak {b['fraction_of_peak']:.3f}")

print("== calibrate --backend cuda (fitted curves, launch overhead, NCCL fits)")
try:
    with open(os.path.join(out, "calibrate-cuda.out")) as f:
        lines = [l.rstrip() for l in f if not l.startswith("  ")]  # progress lines are indented
    print("\n".join("  " + l for l in lines) if lines else "  (no output)")
except OSError:
    print("  no calibrate-cuda.out")

print("== simulate vs run (gpt2-124m-h200; gpt2-1.5b-h200)")
run, sim = load("run-124m.json"), load("simulate-124m.json")
for label, r, prediction in (("124M, datasheet profile", run, sim),
                             ("124M, profile calibrated here", run, load("simulate-124m-calibrated.json")),
                             ("1.5B, datasheet profile", load("run-1.5b.json"), load("simulate-1.5b.json"))):
    if r and prediction:
        measured, predicted = r["iteration_time_s"], prediction["iteration_time_s"]
        print(f"  {label:<30} measured {measured:.4f} s  predicted {predicted:.4f} s  "
              f"error {(predicted - measured) / measured:+.1%}")
if run and sim:
    print(f"  peak memory: ledger {run['ranks'][0]['peak_memory_bytes'] / 2**30:.2f} GiB, allocator "
          f"{run.get('peak_allocated_bytes', 0) / 2**30:.2f} GiB in use, {run.get('peak_reserved_bytes', 0) / 2**30:.2f} GiB reserved")
    print("  losses:", [round(i["loss"], 4) for i in run["iterations"] if i.get("loss") is not None])
else:
    print("  missing run-124m.json or simulate-124m.json")

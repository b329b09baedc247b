# Sourced by check.sh and the bundle's launcher: finds the CUDA libraries the tandem binaries load
# at run time (cuBLAS/cuBLASLt, NCCL; cudart is linked statically) on THIS machine and prepends
# their folders to LD_LIBRARY_PATH: a CUDA toolkit (CUDA_HOME, /usr/local/cuda*), the
# nvidia/*/lib folders of installed Python packages (PyTorch's CUDA wheels), or the system paths.
tandem_add_cuda_libs() {
  local dirs=() d py
  [ -n "${CUDA_HOME:-}" ] && dirs+=("$CUDA_HOME/lib64" "$CUDA_HOME/lib")
  for d in /usr/local/cuda /usr/local/cuda-*; do dirs+=("$d/lib64" "$d/lib" "$d/targets/x86_64-linux/lib"); done
  for py in python3 python; do
    command -v "$py" >/dev/null 2>&1 || continue
    while IFS= read -r d; do dirs+=("$d"); done < <("$py" - <<'PY' 2>/dev/null
import glob, site, sys
roots = list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path
seen = set()
for r in roots:
    for lib in sorted(glob.glob(r + "/nvidia/*/lib")):
        if lib not in seen:
            seen.add(lib); print(lib)
PY
)
    break
  done
  local found=""
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    if ls "$d"/libcublas*.so* "$d"/libnccl*.so* >/dev/null 2>&1; then found="$found:$d"; fi
  done
  export LD_LIBRARY_PATH="${found#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
tandem_add_cuda_libs

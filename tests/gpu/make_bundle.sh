#!/usr/bin/env bash
# Builds the GPU check's bundle on a development machine (with nvcc): the tandem binary, the GPU
# test and benchmark binaries, tandem's modules (libtandem_*.so), the non-system shared libraries
# they need (SimGrid, yaml-cpp, libstdc++, ... found with ldd, and OpenBLAS, which tandem opens on
# first use; glibc and the CUDA/NCCL libraries excluded: the GPU machine has its own),
# platforms/ and scenarios/, and the check scripts. On the GPU machine:
#   tar xJf tandem-gpu-bundle.tar.xz && tandem-gpu-bundle/check.sh [RESULTS_DIR]
# or, on a leased machine that returns a few files: tests/gpu/leased_check.sh (see there).
# Usage: tests/gpu/make_bundle.sh [BUILD_DIR (default build-dev)] [OUTPUT_DIR (default .)]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build-dev}" && pwd)"
dest="$(mkdir -p "${2:-.}" && cd "${2:-.}" && pwd)"
bundle="$dest/tandem-gpu-bundle"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/share" "$bundle/tests/gpu"
bins=(tandem tandem_tests cuda_gemm_bench cuda_training_bench cuda_calibration_bench)
for b in "${bins[@]}"; do
  [ -x "$build/$b" ] || { echo "missing $build/$b (build with CUDA first)" >&2; exit 1; }
  cp "$build/$b" "$bundle/bin/"
  strip --strip-unneeded "$bundle/bin/$b" 2>/dev/null || true
done
# tandem's modules (libtandem_*.so, opened beside the binary on demand) go with it.
modules=()
for m in "$build"/libtandem_*.so; do
  [ -e "$m" ] || continue
  cp "$m" "$bundle/bin/" && modules+=("$m")
done
# Libraries tandem opens on first use rather than links (ldd does not see them): OpenBLAS.
opened=()
for soname in libopenblas.so.0; do
  path="$(ldconfig -p | awk -v n="$soname" '$1 == n && /x86-64/ {print $NF; exit}')"
  [ -n "$path" ] || { echo "missing $soname (install libopenblas0)" >&2; exit 1; }
  cp -L "$path" "$bundle/lib/$soname" && opened+=("$path")
done
# Shared libraries: everything ldd resolves except the C library family and the GPU stack.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libutil\.so|libresolv\.so|libcuda\.so|libcudart|libcublas|libcublasLt|libnccl|libcudnn|libnvidia)'
for b in "${bins[@]/#/$build/}" "${modules[@]}" "${opened[@]}"; do
  ldd "$b" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    [ -e "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
  done
done
strip --strip-unneeded "$bundle/lib/"*.so* 2>/dev/null || true
mkdir -p "$bundle/share/platforms"
cp -r "$root/platforms/devices" "$root/platforms/clusters" "$bundle/share/platforms/"
mkdir -p "$bundle/share/scenarios"
cp "$root"/scenarios/*.yaml "$bundle/share/scenarios/"
cp "$root"/tests/gpu/{check.sh,cuda_libs.sh,pytorch_reference.py,summarize.py} "$bundle/tests/gpu/"
cat > "$bundle/check.sh" <<'LAUNCH'
#!/usr/bin/env bash
# Runs the GPU check from this bundle: bundled libraries first, then this machine's CUDA/NCCL.
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TANDEM_BIN_DIR="$here/bin" TANDEM_DATA_DIR="$here/share"
exec "$here/tests/gpu/check.sh" "${1:-./gpu-results}"
LAUNCH
chmod +x "$bundle/check.sh"
# xz: 25 MB where gzip made 43 (a leased GPU takes the working tree and the archive in 64 MiB).
XZ_OPT="${XZ_OPT:--6 -T0}" tar -C "$dest" -cJf "$dest/tandem-gpu-bundle.tar.xz" tandem-gpu-bundle
du -sh "$bundle" "$dest/tandem-gpu-bundle.tar.xz"

// The measured nccl-tests sweeps (nccl_sweeps.hpp), copied from their public tables.
#include "sim/collectives/nccl_sweeps.hpp"

namespace tandem::sim::nccl {

namespace {

constexpr double KiB = 1024.0;
constexpr double MiB = 1024.0 * KiB;
constexpr double GiB = 1024.0 * MiB;

// Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md at 8fd0c6e, "NCCL Bandwidth":
// 8x A100-SXM4-80GB (NVSwitch, 12 NVLinks each), NCCL 2.18.5, CUDA 12.5, all_reduce_perf in-place
// busbw. (Its sizes are printed rounded, "65K", "132K", "33M": the sweep is -f 2 from 1 KiB.)
constexpr SweepPoint kA100[] = {
    {1 * KiB, 0.04},    {2 * KiB, 0.08},    {4 * KiB, 0.17},    {8 * KiB, 0.33},    {16 * KiB, 0.67},
    {32 * KiB, 1.37},   {64 * KiB, 2.70},   {128 * KiB, 5.15},  {256 * KiB, 10.11}, {512 * KiB, 19.24},
    {1 * MiB, 36.22},   {2 * MiB, 53.54},   {4 * MiB, 71.43},   {8 * MiB, 89.99},   {16 * MiB, 109.22},
    {32 * MiB, 132.77}, {64 * MiB, 166.63}, {128 * MiB, 174.18}, {256 * MiB, 213.87}, {512 * MiB, 221.58},
    {1 * GiB, 228.10},  {2 * GiB, 230.22},  {4 * GiB, 230.48},  {8 * GiB, 231.58}};

// The same guide, Azure_Results/ND_H100_v5_results.md at 8fd0c6e: 8x H100 80GB HBM3 SXM
// (NVSwitch, 18 NVLinks each), NCCL 2.18.5 (NVLS from 2 MiB on), same method.
constexpr SweepPoint kH100[] = {
    {1 * KiB, 0.07},    {2 * KiB, 0.14},    {4 * KiB, 0.27},    {8 * KiB, 0.53},    {16 * KiB, 0.95},
    {32 * KiB, 1.71},   {64 * KiB, 2.72},   {128 * KiB, 5.40},  {256 * KiB, 10.86}, {512 * KiB, 21.35},
    {1 * MiB, 43.70},   {2 * MiB, 81.93},   {4 * MiB, 128.73},  {8 * MiB, 172.13},  {16 * MiB, 234.45},
    {32 * MiB, 295.53}, {64 * MiB, 361.78}, {128 * MiB, 400.61}, {256 * MiB, 423.38}, {512 * MiB, 438.46},
    {1 * GiB, 466.35},  {2 * GiB, 472.36},  {4 * GiB, 475.54},  {8 * GiB, 478.87}};

}  // namespace

NodeSweep measured_node_all_reduce(Arch arch) {
  switch (arch) {
    case Arch::ampere:
      return {8, 12, kA100, "Azure/AI-benchmarking-guide ND_A100_v4_results.md (8fd0c6e): 8x A100 80GB, NCCL 2.18.5"};
    case Arch::hopper:
      return {8, 18, kH100, "Azure/AI-benchmarking-guide ND_H100_v5_results.md (8fd0c6e): 8x H100 80GB, NCCL 2.18.5"};
    case Arch::volta:
    case Arch::blackwell: break;
  }
  return {};
}

}  // namespace tandem::sim::nccl

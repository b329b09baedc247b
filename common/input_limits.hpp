// The bounds every number read from an input file is checked against, in one place with the
// reason for each. They are physical (no link is faster than 100 TB/s) or protective (a value
// past them makes SimGrid abort — a link bandwidth of 1e300 or 1e-320 ends in "The Impossible Did
// Happen" — or deadlock, or makes a size computation leave the 64-bit range), and deliberately
// wide: a value a real machine or model has, and 100x past it, passes.
#pragma once

namespace tandem::limits {

// A closed range [min, max] of a quantity in `unit`.
struct Range {
  double min;
  double max;
  const char* unit;
};

// A closed range of whole numbers (counts, sizes, iterations), read as 64-bit before the check so
// that 4294967298 is refused rather than wrapped to 2.
struct CountRange {
  long long min;
  long long max;
};

// ---- devices (platforms/devices/*.yaml) ----
// Peak FLOP/s of one device: 1 GFLOP/s (slower than any CPU core of the last 20 years) to 100
// PFLOP/s (50x a B200's dense FP8). 1e-320 made every op last ~forever: SimGrid "Deadlock detected".
inline constexpr Range kPeakTflops{1e-3, 1e5, "TFLOP/s"};
// Memory bandwidth of one device: 100 MB/s to 100 TB/s (20x HBM3e's 4.8 TB/s).
inline constexpr Range kMemoryBandwidthGbPerS{0.1, 1e5, "GB/s"};
// Memory capacity of one device: 1 MB to 100 TB (500x a B200's 192 GB).
inline constexpr Range kMemoryCapacityGb{1e-3, 1e5, "GB"};
inline constexpr Range kHostMemoryGb{1e-3, 1e6, "GB"};  // a node's host memory (DGX H100: 2,000)
// Power of one device: 0 to 100 kW (a whole GB200 NVL72 rack draws ~120 kW for 72 GPUs).
inline constexpr Range kPowerW{0, 1e5, "W"};
// Price of one device-hour: 0 to $100,000.
inline constexpr Range kPricePerHourUsd{0, 1e5, "USD/h"};
// Per-op overheads (kernel launch, core hand-off and wake-up): 0 to 100 ms (real: 1-20 us).
// 1e308 us overflowed SimGrid's clock: "Deadlock detected".
inline constexpr Range kOverheadUs{0, 1e5, "us"};
// An efficiency (fraction of peak reached): 1e-6 to 1. 1e-320 is "positive" but divides to inf.
inline constexpr Range kEfficiencyFraction{1e-6, 1, "(a fraction in (0, 1])"};
// A kernel alone on its machine over the same kernel with every core busy: below 1 on machines
// whose cores share caches, memory bandwidth or an SMT core (0.85 on a 2-vCPU EPYC guest); a
// ratio off by a factor of 4 either way is a broken measurement.
inline constexpr Range kAloneKernelTimeFraction{0.25, 4, ""};
// The slowest core's kernel time over the cores' mean: 1 or more, below 4.
inline constexpr Range kSlowestCoreFactor{1, 4, ""};
// The plateau of a measured efficiency curve, relative to the profile's peak: above 1 happens (a
// CPU kernel in cache beats the DRAM bandwidth), 100x does not.
inline constexpr Range kCurveMaxEfficiency{1e-6, 100, ""};
// The half-saturation work of a curve (FLOPs or bytes): 0 to 1e18 (an exa-op kernel).
inline constexpr Range kCurveHalfWork{0, 1e18, ""};

// ---- links (platforms/clusters/*.yaml) ----
// Bandwidth of any link, port, bus or measured collective: 1 MB/s to 100 TB/s (50x NVLink 5's
// 1.8 TB/s). Gb/s figures are converted to GB/s before the check.
inline constexpr Range kLinkBandwidthGbPerS{1e-3, 1e5, "GB/s"};
// Latency of a link, port, switch or collective: 0 to 1 s (a geostationary hop is 0.25 s).
inline constexpr Range kLatencyUs{0, 1e6, "us"};
// Leaf-uplink oversubscription: 1/100 (over-provisioned) to 1000:1.
inline constexpr Range kOversubscription{1e-2, 1e3, ""};
// Devices of one cluster, and every count bounded by them (nodes, devices per node, shared
// cores, nodes per leaf): 2^18 = 262,144, above the largest GPU cluster built (~200,000) and 16x
// the 16,384 GPUs a folded simulation is expected to handle; the SimGrid platform of a million
// devices takes minutes and gigabytes before the first op.
inline constexpr long long kMaxClusterDevices = 1LL << 18;
inline constexpr CountRange kClusterDevices{1, kMaxClusterDevices};

// ---- models (scenarios: model:) ----
// Per-dimension bounds keep every analytic size (parameters, FLOPs, activation bytes) far inside
// 64 bits; the largest published models are ~100x inside each.
inline constexpr CountRange kNumLayers{1, 1 << 16};        // GPT-3: 96
inline constexpr CountRange kHiddenSize{1, 1 << 20};       // GPT-3: 12,288
inline constexpr CountRange kAttentionHeads{1, 1 << 16};   // GPT-3: 96
inline constexpr CountRange kHeadDim{1, 1 << 16};          // usually 64-256
// FlashAttention's major versions (a scenario's flash_attn_version, a profile's flash_version).
inline constexpr CountRange kFlashAttentionVersion{1, 3};
inline constexpr CountRange kFfnHiddenSize{1, 1 << 22};    // GPT-3: 49,152
inline constexpr CountRange kVocabSize{1, 1LL << 31};      // largest: ~256k
inline constexpr CountRange kSeqLength{1, 1 << 24};        // longest contexts: ~10M tokens
inline constexpr CountRange kMlpWidth{1, 1 << 24};
// Mixture of experts: DeepSeek-V3 has 256 routed experts, top-8; 2^16 and 2^10 leave room.
inline constexpr CountRange kMoeExperts{0, 1 << 16};
inline constexpr CountRange kMoeTopk{1, 1 << 10};
// Expert capacity factor (GShard / Megatron: 1.0-2.0 in practice; 0 = dropless) and the
// load-balancing loss coefficient (Switch: 1e-2; Megatron's default 0).
inline constexpr Range kMoeCapacityFactor{0, 1024, ""};
inline constexpr Range kMoeAuxLossCoeff{0, 10, ""};
inline constexpr Range kMoeLoadImbalance{0, 1024, ""};  // the busiest expert's load over the mean (0: floor)
inline constexpr CountRange kMlpLayers{0, 1 << 12};
// A whole model: 1e15 parameters (1000x a 1T model) keeps bytes of parameters, gradients and
// optimizer state (16-20 bytes each) inside 64 bits with room.
inline constexpr double kMaxParameters = 1e15;
// Activation elements of one micro-batch through the whole model (layers x tokens x width, and
// the attention scores): 1e16 elements (40 PB in fp32), far above any device, inside 64 bits.
inline constexpr double kMaxActivationElements = 1e16;

// ---- training (scenarios: training:) ----
inline constexpr CountRange kGlobalBatchSize{1, 1 << 24};  // sequences; real: 512-16,384
inline constexpr CountRange kDdpBucketSize{1, 1LL << 40};  // parameters per gradient bucket
// Learning rate: (0, 10]. Adam moves each weight by ~lr per step; lr 1e308 became inf as a float
// and every loss NaN.
inline constexpr Range kLearningRate{1e-12, 10, ""};
inline constexpr Range kWeightDecay{0, 10, ""};
inline constexpr Range kOuterLearningRate{1e-6, 10, ""};  // DiLoCo's outer SGD (the paper: 0.7)
inline constexpr Range kOuterMomentum{0, 0.999, ""};      // its Nesterov momentum (the paper: 0.9)

// ---- strategy and simulation (scenarios: strategy:, simulation:) ----
inline constexpr CountRange kParallelSize{1, kMaxClusterDevices};  // dp, tp, pp
inline constexpr CountRange kLocalSgdSteps{1, 1 << 20};  // steps between model averagings
inline constexpr CountRange kLocalSgdGroupSize{1, 1 << 20};  // replicas per hierarchical local SGD block
inline constexpr CountRange kParameterServers{0, kMaxClusterDevices};  // server ranks after the workers
inline constexpr CountRange kPartitionBytes{64, 1LL << 34};  // a parameter server's partition
// Steps a parameter-server update may lag (each one more copy of the gradients on the servers).
inline constexpr CountRange kParameterServerStaleness{0, 64};
// Asynchronous servers' order of pushes: the log-spread of a worker's step time (0: none; 1 is a
// factor e either way within one standard deviation, past any machine worth training on) and the
// seed it is drawn from (any 53-bit whole number: exact as a YAML number).
inline constexpr Range kParameterServerJitter{0, 1, ""};
inline constexpr CountRange kParameterServerSeed{0, (1LL << 53) - 1};
inline constexpr CountRange kVirtualStages{1, 1 << 10};
inline constexpr CountRange kIterations{1, 1'000'000};
inline constexpr CountRange kWarmupIterations{0, 1'000'000};
// The simulator's own size, estimated before it starts (scenarios/scenario_limits.cpp): ops issued
// by all simulated ranks over all iterations. Measured: a few tens of bytes of this process's memory
// (scenario_limits.cpp) and 10-100 us each (gpt3-175b-3d, 297k ops, on a loaded 2-core VM; 11-38 us
// on Llama 3 405B's layout with every rank simulated: its 8,192-GPU case, estimated at 1.1e8, issued
// 72.5M ops in 46 minutes on a loaded 2-core VM); 2e8 ops is an hours-long run in several GB, still
// finishing, and 25x a 1T-parameter model's 512-micro-batch iteration on 16,384 GPUs (folded).
inline constexpr double kMaxSimulatedOps = 2e8;

// ---- search (scenarios: search:) ----
inline constexpr CountRange kTopK{1, 1 << 20};
inline constexpr CountRange kEvaluations{1, 1 << 24};  // exhaustive_limit, max_evaluations, refine
inline constexpr CountRange kSeed{0, (1LL << 62)};

}  // namespace tandem::limits

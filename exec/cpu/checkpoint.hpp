// Checkpoints of the CPU backend: the full training state of a run in global form, saved
// atomically and refused when corrupted or truncated.
//
// The state of a run after `next_iteration` iterations is every logical tensor of the
// categories parameters and optimizer_state (weights, fp32 master copies, AdamW m and v),
// assembled whole from the ranks' parts (global_state.hpp). Nothing else is needed to continue:
// gradients are zeroed at every step, and the data position and dropout masks of an iteration
// are functions of (seed, iteration, global batch) (data.hpp), so a run resumed from a
// checkpoint taken after k iterations gives the numbers of an uninterrupted run, bit for bit
// under the same strategy (tested), and up to round-off under another one (data, tensor,
// pipeline parallel, ZeRO: each rank takes its part of the logical tensors).
//
// File format (little-endian):
//   "TANDEMCK"  8 bytes magic
//   u32         format version (1)
//   u64         length of the header (JSON: strategy, world_size, next_iteration, seed,
//               sequences_per_iteration, and the tensors as [name, numel, offset in floats
//               into the payload])
//   header
//   u64         payload length in bytes
//   payload     every tensor's fp32 values, back to back
//   u64         checksum of everything before it (64-bit, word-wise FNV-1a/splitmix mix)
// Saving writes a temporary file in the same directory, fsyncs it, renames it over the target
// and fsyncs the directory: a reader sees the old checkpoint or the whole new one. Loading
// checks the magic, the version, every length against the file size (truncation), the checksum
// (corruption) and that the tensor index fits the payload; any failure is an InputError naming
// the file and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tandem::exec::cpu {

struct Checkpoint {
  std::string strategy;     // Strategy::name() of the run that wrote it (informative)
  int world_size = 0;
  int next_iteration = 0;   // iterations completed
  std::uint64_t seed = 0;
  std::int64_t sequences_per_iteration = 1;  // the global batch: data positions depend on it
  std::map<std::string, std::vector<float>> tensors;  // logical tensors by name
};

void save_checkpoint(const Checkpoint& checkpoint, const std::string& path);
// The checksum a checkpoint ends with, over every byte before it (`data`, `size`): for tools that
// reseal a file they edited (the fuzzing regression test replays mutated headers through it).
std::uint64_t checkpoint_checksum(const char* data, std::size_t size);
Checkpoint load_checkpoint(const std::string& path);

}  // namespace tandem::exec::cpu

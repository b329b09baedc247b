// Checkpoints of the CPU backend: the full training state of every rank, saved atomically and
// refused when corrupted or truncated.
//
// The state of a run after `next_iteration` iterations is, per rank, every live tensor of the
// categories parameters and optimizer_state by name (weights, fp32 master copies, AdamW m and
// v). Nothing else is needed to continue bit for bit: gradients are zeroed at every step, and
// the data and dropout masks of an iteration are functions of (seed, iteration) (data.hpp), so a
// run resumed from a checkpoint taken after k iterations gives exactly the numbers of an
// uninterrupted run (tested).
//
// File format (little-endian):
//   "TANDEMCK"  8 bytes magic
//   u32         format version (1)
//   u64         length of the header (JSON: strategy, world_size, next_iteration, seed, and per
//               rank the tensors as [name, numel, offset in floats into the payload])
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

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tandem::exec::cpu {

struct Checkpoint {
  std::string strategy;     // Strategy::name() of the run that wrote it
  int world_size = 0;
  int next_iteration = 0;   // iterations completed
  std::uint64_t seed = 0;
  std::vector<std::map<std::string, std::vector<float>>> ranks;  // per rank: tensors by name
};

void save_checkpoint(const Checkpoint& checkpoint, const std::string& path);
Checkpoint load_checkpoint(const std::string& path);

}  // namespace tandem::exec::cpu

#include "exec/cpu/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "analysis/json_strict_parse.hpp"
#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/input_limits.hpp"
#include "common/output_set.hpp"
#include "exec/cpu/data.hpp"

namespace tandem::exec::cpu {

namespace {

constexpr char kMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'C', 'K'};
constexpr std::uint32_t kVersion = 2;  // 2: global (logical) tensors instead of per-rank ones

}  // namespace

std::uint64_t checkpoint_checksum(const char* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, data + i, 8);
    h = splitmix64(h ^ word);
  }
  for (; i < size; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 0x100000001b3ull;
  return splitmix64(h ^ size);
}

namespace {

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

void save_checkpoint(const Checkpoint& ck, const std::string& path) {
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t offset = 0;
  for (const auto& [name, values] : ck.tensors) {
    list.push_back({name, values.size(), offset});
    offset += values.size();
  }
  const std::string header = nlohmann::json{{"strategy", ck.strategy},
                                            {"world_size", ck.world_size},
                                            {"next_iteration", ck.next_iteration},
                                            {"seed", ck.seed},
                                            {"sequences_per_iteration", ck.sequences_per_iteration},
                                            {"tensors", list}}
                                 .dump();
  std::string out;
  out.reserve(64 + header.size() + offset * sizeof(float));
  out.append(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, kVersion);
  put<std::uint64_t>(out, header.size());
  out += header;
  put<std::uint64_t>(out, offset * sizeof(float));
  for (const auto& [name, values] : ck.tensors)
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  put<std::uint64_t>(out, checkpoint_checksum(out.data(), out.size()));

  // Atomic replace (temporary file beside it, fsync, rename, fsync the folder), and the
  // temporary file removed on every exit path, a signal included (common/output_set.hpp).
  OutputSet file;
  file.stage(path, out, OutputSet::Durability::synced);
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path) {
  // A regular file of bounded size: /dev/zero or a FIFO must not be read until memory runs out.
  const std::string data = read_input_file(path, kMaxCheckpointBytes);
  const std::size_t size = data.size();
  // Every error names the field and the byte offset where it lies (checkpoints are binary).
  auto bad_at = [&](std::size_t offset, const std::string& field, const std::string& why) {
    throw InputError(path, 0, field, "not a usable checkpoint: at byte " + std::to_string(offset) + ": " + why);
  };
  std::size_t at = 0;
  auto take = [&](std::size_t n, const char* what) {
    if (n > size - at)
      bad_at(at, what, std::string("truncated (") + what + " missing; file has " + std::to_string(size) + " bytes)");
    const std::size_t start = at;
    at += n;
    return start;
  };
  auto read_u64 = [&](const char* what) {
    std::uint64_t v;
    std::memcpy(&v, data.data() + take(8, what), 8);
    return v;
  };
  if (size < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    bad_at(0, "magic", "not a Tandem checkpoint (wrong magic)");
  at = sizeof kMagic;
  std::uint32_t version;
  const std::size_t version_at = take(4, "version");
  std::memcpy(&version, data.data() + version_at, 4);
  if (version != kVersion)
    bad_at(version_at, "version",
           "format version " + std::to_string(version) + ", this build reads " + std::to_string(kVersion));
  const std::size_t header_size_at = at;
  const std::uint64_t header_size = read_u64("header length");
  if (header_size > size - at)
    bad_at(header_size_at, "header length", "truncated (header of " + std::to_string(header_size) + " bytes)");
  const std::size_t header_at = take(static_cast<std::size_t>(header_size), "header");
  const std::size_t payload_size_at = at;
  const std::uint64_t payload_size = read_u64("payload length");
  if (payload_size > size - at || payload_size % sizeof(float) != 0)
    bad_at(payload_size_at, "payload length",
           "truncated or corrupted (payload of " + std::to_string(payload_size) + " bytes)");
  const std::size_t payload_at = take(static_cast<std::size_t>(payload_size), "payload");
  const std::size_t checksum_at = at;
  const std::uint64_t stored = read_u64("checksum");
  if (at != size) bad_at(at, "checksum", std::to_string(size - at) + " unexpected bytes after the checksum");
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION  // fuzz/run.sh: mutated inputs reach the header parsing
  if (checkpoint_checksum(data.data(), checksum_at) != stored) bad_at(checksum_at, "checksum", "corrupted (checksum mismatch)");
#endif

  // The header is JSON; each field is type- and range-checked here (nlohmann's own conversions
  // narrow silently and its exceptions are not messages for a user).
  // A key given twice or a number beyond a double is refused at its field, like a syntax error.
  const nlohmann::json h = parse_json_strictly(data.substr(header_at, header_size), [&](const JsonRefusal& r) {
    bad_at(header_at + r.byte, r.field.empty() ? std::string("header") : "header." + r.field, r.message);
  });
  auto header_error = [&](const std::string& field, const std::string& why) { bad_at(header_at, "header." + field, why); };
  if (!h.is_object()) header_error("", "expected a JSON object");
  auto whole = [&](const nlohmann::json& v, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      header_error(field, "expected a whole number >= 0");
    const std::uint64_t n = v.get<std::uint64_t>();
    if (n < lo || n > hi)
      header_error(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(n));
    return n;
  };
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!h.contains(key)) header_error(key, "missing");
    return h[key];
  };
  if (!field("strategy").is_string()) header_error("strategy", "expected a string");
  Checkpoint ck;
  ck.strategy = h["strategy"].get<std::string>();
  ck.world_size = static_cast<int>(whole(field("world_size"), "world_size", 1, limits::kMaxClusterDevices));
  ck.next_iteration = static_cast<int>(whole(field("next_iteration"), "next_iteration", 0, limits::kIterations.max));
  ck.seed = whole(field("seed"), "seed", 0, std::numeric_limits<std::uint64_t>::max());
  ck.sequences_per_iteration = static_cast<std::int64_t>(
      whole(field("sequences_per_iteration"), "sequences_per_iteration", 1, limits::kGlobalBatchSize.max));
  const nlohmann::json& list = field("tensors");
  if (!list.is_array()) header_error("tensors", "expected a list");
  const std::uint64_t floats = payload_size / sizeof(float);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at_entry = "tensors[" + std::to_string(i) + "]";
    const nlohmann::json& entry = list[i];
    if (!entry.is_array() || entry.size() != 3 || !entry[0].is_string())
      header_error(at_entry, "expected [name, element count, offset in floats]");
    const auto name = entry[0].get<std::string>();
    const std::uint64_t numel = whole(entry[1], at_entry + "[1]", 0, floats);
    const std::uint64_t offset = whole(entry[2], at_entry + "[2]", 0, floats);
    if (numel > floats - offset) header_error(at_entry, "tensor '" + name + "' lies outside the payload");
    std::vector<float> values(numel);
    // An empty tensor's vector may have no buffer at all, and memcpy's pointers must not be null
    // even for 0 bytes (found by fuzzing: fuzz/README.md).
    if (numel > 0)
      std::memcpy(values.data(), data.data() + payload_at + offset * sizeof(float), numel * sizeof(float));
    if (!ck.tensors.emplace(name, std::move(values)).second) header_error(at_entry, "tensor '" + name + "' appears twice");
  }
  return ck;
}

}  // namespace tandem::exec::cpu

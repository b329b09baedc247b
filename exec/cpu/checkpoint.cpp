#include "exec/cpu/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "exec/cpu/data.hpp"

namespace tandem::exec::cpu {

namespace {

constexpr char kMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'C', 'K'};
constexpr std::uint32_t kVersion = 2;  // 2: global (logical) tensors instead of per-rank ones

std::uint64_t checksum(const char* data, std::size_t size) {
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

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InputError(path, 0, "", "not a usable checkpoint: " + why);
}

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write checkpoint " + path + ": " + errno_text());
    }
    done += static_cast<std::size_t>(n);
  }
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
  put<std::uint64_t>(out, checksum(out.data(), out.size()));

  // Atomic replace (temporary file beside it, fsync, rename, fsync the folder), and the
  // temporary file removed on every exit path, a signal included (common/output_set.hpp).
  OutputSet file;
  file.stage(path, out, OutputSet::Durability::synced);
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open checkpoint");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t size = data.size();
  std::size_t at = 0;
  auto take = [&](std::size_t n, const char* what) {
    if (n > size - at) bad(path, std::string("truncated (") + what + " missing; file has " + std::to_string(size) + " bytes)");
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
    bad(path, "not a Tandem checkpoint (wrong magic)");
  at = sizeof kMagic;
  std::uint32_t version;
  std::memcpy(&version, data.data() + take(4, "version"), 4);
  if (version != kVersion)
    bad(path, "format version " + std::to_string(version) + ", this build reads " + std::to_string(kVersion));
  const std::uint64_t header_size = read_u64("header length");
  if (header_size > size) bad(path, "truncated (header of " + std::to_string(header_size) + " bytes)");
  const std::size_t header_at = take(static_cast<std::size_t>(header_size), "header");
  const std::uint64_t payload_size = read_u64("payload length");
  if (payload_size > size || payload_size % sizeof(float) != 0)
    bad(path, "truncated or corrupted (payload of " + std::to_string(payload_size) + " bytes)");
  const std::size_t payload_at = take(static_cast<std::size_t>(payload_size), "payload");
  const std::size_t checksum_at = at;
  const std::uint64_t stored = read_u64("checksum");
  if (at != size) bad(path, std::to_string(size - at) + " unexpected bytes after the checksum");
  if (checksum(data.data(), checksum_at) != stored) bad(path, "corrupted (checksum mismatch)");

  Checkpoint ck;
  try {
    const nlohmann::json h = nlohmann::json::parse(data.substr(header_at, header_size));
    ck.strategy = h.at("strategy").get<std::string>();
    ck.world_size = h.at("world_size").get<int>();
    ck.next_iteration = h.at("next_iteration").get<int>();
    ck.seed = h.at("seed").get<std::uint64_t>();
    ck.sequences_per_iteration = h.at("sequences_per_iteration").get<std::int64_t>();
    const auto& list = h.at("tensors");
    if (!list.is_array() || ck.world_size < 1 || ck.next_iteration < 0 || ck.sequences_per_iteration < 1)
      bad(path, "inconsistent header");
    const std::uint64_t floats = payload_size / sizeof(float);
    for (const auto& entry : list) {
      const auto name = entry.at(0).get<std::string>();
      const auto numel = entry.at(1).get<std::uint64_t>();
      const auto offset = entry.at(2).get<std::uint64_t>();
      if (offset > floats || numel > floats - offset)
        bad(path, "tensor '" + name + "' lies outside the payload");
      std::vector<float> values(numel);
      std::memcpy(values.data(), data.data() + payload_at + offset * sizeof(float), numel * sizeof(float));
      if (!ck.tensors.emplace(name, std::move(values)).second) bad(path, "tensor '" + name + "' appears twice");
    }
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("malformed header: ") + e.what());
  }
  return ck;
}

}  // namespace tandem::exec::cpu

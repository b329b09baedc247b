// Loading a checkpoint: what is not one is refused before it is read (a device, a FIFO), and
// every error names the field and the byte offset where it lies (a checkpoint is binary: no
// lines), header fields included, each range-checked rather than narrowed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/input_error.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem::exec::cpu {
namespace {

InputError load_error(const std::string& path) {
  try {
    load_checkpoint(path);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    return e;
  }
  ADD_FAILURE() << "expected an InputError for " << path;
  return InputError("", 0, "", "");
}

Checkpoint small() {
  Checkpoint ck;
  ck.strategy = "s";
  ck.world_size = 2;
  ck.next_iteration = 3;
  ck.seed = 7;
  ck.sequences_per_iteration = 8;
  ck.tensors["w"] = {1, 2, 3};
  return ck;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(CheckpointReader, ADeviceOrAFifoIsRefusedNotRead) {
  EXPECT_NE(std::string(load_error("/dev/zero").what()).find("not a regular file"), std::string::npos);
  test::TempDir dir;
  const std::string fifo = (dir.path() / "ck.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(std::string(load_error(fifo).what()).find("not a regular file"), std::string::npos);
}

TEST(CheckpointReader, ErrorsNameTheFieldAndTheByteOffset) {
  test::TempDir dir;
  const std::string good = (dir.path() / "good.ck").string();
  save_checkpoint(small(), good);
  const std::string bytes = bytes_of(good);

  const std::string cut = dir.write("cut.ck", bytes.substr(0, 16));
  const InputError truncated = load_error(cut);
  EXPECT_EQ(truncated.field(), "header length");
  EXPECT_NE(std::string(truncated.what()).find("at byte 12"), std::string::npos) << truncated.what();

  std::string flipped = bytes;
  flipped[bytes.size() - 12] ^= 0x01;  // in the payload
  const InputError corrupted = load_error(dir.write("flipped.ck", flipped));
  EXPECT_EQ(corrupted.field(), "checksum");
  EXPECT_NE(std::string(corrupted.what()).find("at byte " + std::to_string(bytes.size() - 8)), std::string::npos)
      << corrupted.what();

  std::string version = bytes;
  version[8] = 9;
  EXPECT_EQ(load_error(dir.write("version.ck", version)).field(), "version");
}

TEST(CheckpointReader, HeaderFieldsAreRangeChecked) {
  test::TempDir dir;
  Checkpoint no_ranks = small();
  no_ranks.world_size = 0;
  const std::string a = (dir.path() / "a.ck").string();
  save_checkpoint(no_ranks, a);
  EXPECT_EQ(load_error(a).field(), "header.world_size");

  Checkpoint negative = small();
  negative.next_iteration = -1;
  const std::string b = (dir.path() / "b.ck").string();
  save_checkpoint(negative, b);
  EXPECT_EQ(load_error(b).field(), "header.next_iteration");
}

// An empty tensor's values have no buffer: reading it must not hand memcpy a null pointer
// (undefined even for 0 bytes; found by fuzzing, caught by UBSan in tests/sanitize.sh asan).
TEST(CheckpointReader, AnEmptyTensorRoundTrips) {
  test::TempDir dir;
  Checkpoint ck = small();
  ck.tensors["empty"] = {};
  const std::string path = (dir.path() / "empty.ck").string();
  save_checkpoint(ck, path);
  const Checkpoint back = load_checkpoint(path);
  ASSERT_EQ(back.tensors.count("empty"), 1u);
  EXPECT_TRUE(back.tensors.at("empty").empty());
  EXPECT_EQ(back.tensors.at("w"), ck.tensors.at("w"));
}

}  // namespace
}  // namespace tandem::exec::cpu

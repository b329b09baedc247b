// gzip for traces: what is compressed comes back byte for byte; a stream that is not gzip, is cut
// short or would decompress past the cap is refused (a trace reader turns that into an InputError).
#include "common/gzip.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace tandem {
namespace {

std::string sample() {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "[" + std::to_string(i % 64) + ",0," + std::to_string(i % 97) + ",3,0,0]\n";
  return text;
}

TEST(Gzip, WhatIsCompressedComesBackByteForByteAndSmaller) {
  const std::string text = sample();
  const std::string packed = gzip_compress(text);
  EXPECT_LT(packed.size() * 4, text.size());
  EXPECT_EQ(gzip_decompress(packed, text.size()), text);
  EXPECT_EQ(gzip_decompress(gzip_compress(""), 0), "");
}

TEST(Gzip, OnlyPathsEndingInGzAreCompressed) {
  EXPECT_TRUE(is_gzip_path("trace.json.gz"));
  EXPECT_FALSE(is_gzip_path("trace.json"));
  EXPECT_FALSE(is_gzip_path(".gz"));
  EXPECT_EQ(gzipped_if_named("t.json", "abc"), "abc");
  EXPECT_EQ(gzip_decompress(gzipped_if_named("t.json.gz", "abc"), 3), "abc");
}

TEST(Gzip, NotGzipCutShortOrPastTheCapIsRefused) {
  const std::string text = sample();
  const std::string packed = gzip_compress(text);
  EXPECT_THROW(gzip_decompress("{\"schema\": 1}", 1000), std::runtime_error);
  EXPECT_THROW(gzip_decompress(packed.substr(0, packed.size() / 2), text.size()), std::runtime_error);
  EXPECT_THROW(gzip_decompress(packed, text.size() - 1), std::runtime_error);
}

}  // namespace
}  // namespace tandem

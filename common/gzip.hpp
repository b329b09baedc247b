// gzip compression of the files Tandem writes large (traces: a 64-rank timeline is ~20 MB of
// JSON and ~2 MB gzipped; Perfetto and chrome://tracing open .json.gz as they are), and the
// decompression of the ones it reads back, capped so that a small bomb cannot fill memory.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

// Whether `path` names a gzip file (ends with ".gz").
bool is_gzip_path(const std::string& path);

std::string gzip_compress(const std::string& data);
// `text` compressed when `path` names a gzip file, as it is otherwise: what a writer of traces
// stages for `path`.
std::string gzipped_if_named(const std::string& path, std::string text);

// The data of a gzip stream; std::runtime_error when it is not one, is cut short, or would
// exceed `max_bytes` once decompressed.
std::string gzip_decompress(const std::string& compressed, std::uint64_t max_bytes);

}  // namespace tandem

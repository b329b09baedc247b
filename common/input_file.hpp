// Reading an input file whole, after refusing what would hang or exhaust memory: a FIFO blocks
// a plain open() forever, /dev/zero never ends, and a 50 MB YAML file costs yaml-cpp a minute
// and gigabytes before its first error. Every reader of input files (YAML descriptions, JSON
// traces, checkpoints) goes through here, so the refusal reads the same everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

// Size caps, checked before reading (an InputError names the file and the cap):
// - YAML descriptions (scenarios, clusters, device profiles): the largest bundled one is a few
//   KB; 16 MiB is thousands of times that, yet yaml-cpp still parses it in seconds.
inline constexpr std::uint64_t kMaxYamlBytes = std::uint64_t{16} << 20;
// - JSON summaries (prediction, run summary, search results): 16 MiB for the same reason.
inline constexpr std::uint64_t kMaxJsonBytes = std::uint64_t{16} << 20;
// - traces: one record per op and rank; a traced 3D-parallel simulation writes hundreds of MB,
//   so traces get 1 GiB (parsing holds a few times that in memory).
inline constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{1} << 30;
// - checkpoints: the CPU backend's training state (fp32 parameters and Adam moments of the
//   models it can run); 16 GiB is far above any of them.
inline constexpr std::uint64_t kMaxCheckpointBytes = std::uint64_t{16} << 30;
// - text corpora (run --corpus): held in memory whole, read byte by byte; 1 GiB of text is more
//   than the CPU backend trains on in days.
inline constexpr std::uint64_t kMaxCorpusBytes = std::uint64_t{1} << 30;

// The field of an InputError about a file as a whole (line 0): it cannot be opened or read, is
// not a regular file, or is too large.
inline constexpr const char* kWholeFileField = "(file)";

// The whole content of `path`. InputError (file, line 0, field kWholeFileField) when it cannot be
// opened, is not a regular file (FIFO, device, directory, socket), is larger than `max_bytes`, or
// cannot be read.
std::string read_input_file(const std::string& path, std::uint64_t max_bytes);
// The same checks without reading: a file a later step reads, refused before anything costly.
void check_input_file(const std::string& path, std::uint64_t max_bytes);

// Whether `path` names something that exists: false, never an exception, when the name cannot be
// a path at all (a component longer than the file system allows, found by fuzzing a scenario's
// `cluster:`), so that the reader goes on to say what it could not find.
bool path_exists(const std::string& path);

// A path an input file names (`reference`) read from that file's folder when something is there,
// as given otherwise (relative to the working directory, or absolute).
std::string path_beside(const std::string& file, const std::string& reference);

}  // namespace tandem

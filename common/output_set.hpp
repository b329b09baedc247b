// The files one command writes (--json, --trace, --chrome-trace, a report, a winner scenario),
// committed together and only when the command succeeds.
//
// Each output is written at once to a temporary file beside its target (<target>.tmp.<pid>,
// same folder, so the final rename is atomic) and registered for removal on a signal
// (common/interrupts.hpp). commit() renames them all over their targets, with a signal held off
// until the last rename: a reader sees every old file or every new one. A set destroyed without
// commit() (the command failed or threw) removes its temporary files and leaves the targets as
// they were.
#pragma once

#include <string>
#include <vector>

namespace tandem {

class OutputSet {
 public:
  enum class Durability { buffered, synced };  // synced: fsync the file and its folder (checkpoints)

  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();

  // Before the work starts: refuses a target that cannot be written, so that hours of work are
  // not lost on a typo. A missing folder, or a folder as target, is bad input (InputError naming
  // `option`); a folder we may not write to is an environment failure (std::runtime_error).
  // "" (no such output) and "-" (standard output) are accepted.
  static void check_writable(const std::string& path, const std::string& option);

  // Writes `text` to the temporary file of `path` now (a second stage of the same path
  // replaces the first). Throws std::runtime_error with the cause (e.g. no space left).
  void stage(const std::string& path, const std::string& text, Durability durability = Durability::buffered);

  // Renames every staged file over its target.
  void commit();

 private:
  struct Staged {
    std::string temporary;
    std::string target;
    Durability durability;
  };
  std::vector<Staged> staged_;
};

// One file on its own: a reader sees the old file or the whole new one.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace tandem

// Bad input (a scenario, platform or trace that is malformed or inconsistent) is reported as one
// InputError that names the file, the line and the field. The CLI turns it into one line on
// stderr and exit status 2; nothing else in Tandem catches it.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

class InputError : public std::runtime_error {
 public:
  // line is 1-based; 0 means "the whole file" (e.g. it cannot be opened).
  InputError(std::string file, int line, std::string field, const std::string& message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field() const { return field_; }
  // What is wrong, without where (what() is "file:line: field 'x': message").
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  std::string field_;
  std::string message_;
};

// Exit status for bad input, shared by every sub-command.
inline constexpr int kExitBadInput = 2;

}  // namespace tandem

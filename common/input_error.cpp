#include "common/input_error.hpp"

namespace tandem {
namespace {

// One line, of a readable length, whatever the input held: a quoted value may carry newlines or
// control bytes, or be megabytes long.
constexpr std::size_t kMaxMessageChars = 1000;

std::string one_line(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= kMaxMessageChars) return out + "...";
    if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) out += '?';
    else out += static_cast<char>(c);
  }
  return out;
}

std::string format(const std::string& file, int line, const std::string& field,
                   const std::string& message) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  std::string what = field.empty() ? message : "field '" + field + "': " + message;
  return one_line(where + ": " + what);
}
}  // namespace

InputError::InputError(std::string file, int line, std::string field, const std::string& message)
    : std::runtime_error(format(file, line, field, message)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)),
      message_(message) {}

}  // namespace tandem

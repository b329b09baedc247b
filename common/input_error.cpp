#include "common/input_error.hpp"

namespace tandem {
namespace {
std::string format(const std::string& file, int line, const std::string& field,
                   const std::string& message) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  std::string what = field.empty() ? message : "field '" + field + "': " + message;
  return where + ": " + what;
}
}  // namespace

InputError::InputError(std::string file, int line, std::string field, const std::string& message)
    : std::runtime_error(format(file, line, field, message)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)) {}

}  // namespace tandem

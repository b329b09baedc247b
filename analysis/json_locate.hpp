// The line of a field in a JSON text, for error messages: nlohmann's tree keeps no positions, so
// a reader that finds a bad value at "records[3].rank" asks here where that is in the file.
#pragma once

#include <cstddef>
#include <string>

namespace tandem {

// Where a value starts: its 1-based line and its byte offset in the text.
struct JsonPosition {
  int line = 1;
  std::size_t byte = 0;
};

// The start of the value at `field_path`, as json_line_of finds it. With `repeat` = n, the last
// key of the path is the (n+1)-th occurrence of that key in its object: a key given twice
// ("records[3].rank" with repeat 1) is reported where it is given again, not where it was first.
JsonPosition json_position_of(const std::string& text, const std::string& field_path, int repeat = 0);

// The 1-based line where the value at `field_path` ("records[3].rank", "schema") starts in
// `text`, a valid JSON document; the line of the deepest enclosing value found when the path
// does not exist all the way (a missing field is reported at its object), 1 for "".
int json_line_of(const std::string& text, const std::string& field_path);

}  // namespace tandem

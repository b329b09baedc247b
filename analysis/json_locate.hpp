// The line of a field in a JSON text, for error messages: nlohmann's tree keeps no positions, so
// a reader that finds a bad value at "records[3].rank" asks here where that is in the file.
#pragma once

#include <string>

namespace tandem {

// The 1-based line where the value at `field_path` ("records[3].rank", "schema") starts in
// `text`, a valid JSON document; the line of the deepest enclosing value found when the path
// does not exist all the way (a missing field is reported at its object), 1 for "".
int json_line_of(const std::string& text, const std::string& field_path);

}  // namespace tandem

// Parsing a JSON input without nlohmann's silent or raw behaviours: a key given twice in one
// object (nlohmann keeps the last, so `"rank": 1, "rank": 7` would read as 7 with no word), a
// number beyond a double (nlohmann throws out_of_range with no position), and a syntax error
// (a byte offset, but no field). Every refusal says where: the byte, its line, and the field
// path at which the parser stood ("records[3].rank"), so each reader (traces, summaries,
// checkpoint headers) can report it as an input error with file, line and field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>

namespace tandem {

struct JsonRefusal {
  std::size_t byte = 0;  // offset in the text of the offending key, value or character
  int line = 1;          // 1-based line of `byte`
  std::string field;     // path of the key or value ("records[3].rank"); "" at the top level
  std::string message;   // what is wrong, one line
};

// The parsed `text`; on the first problem calls `refuse`, which must throw (the caller's own
// error type, e.g. InputError). Any nesting depth nlohmann takes is taken.
nlohmann::json parse_json_strictly(const std::string& text, const std::function<void(const JsonRefusal&)>& refuse);

}  // namespace tandem

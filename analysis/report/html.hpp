// Escaping for the HTML report: every string that reaches the page (op ids, scenario and
// strategy names, file names) goes through one of these.
#pragma once

#include <string>
#include <string_view>

namespace tandem::report {

// Text and attribute values: & < > " ' become entities.
std::string escape_html(std::string_view text);

// JSON embedded in <script type="application/json">: "</" and "<!--" could end or alter the
// script element, so '<' is written as the JSON escape \u003c (the JSON value is unchanged).
std::string json_for_script(std::string_view json);

}  // namespace tandem::report

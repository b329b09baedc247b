// Escaping for the HTML report: every string that reaches the page (op ids, scenario and
// strategy names, file names) goes through one of these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::report {

// Text and attribute values: & < > " ' become entities.
std::string escape_html(std::string_view text);

// JSON embedded in <script type="application/json">: "</" and "<!--" could end or alter the
// script element, so '<' is written as the JSON escape \u003c (the JSON value is unchanged).
std::string json_for_script(std::string_view json);

// The building blocks every section uses; every text argument is escaped here.
std::string html_section(const std::string& name, const std::string& title, const std::string& body_html);
std::string html_paragraph(const std::string& text, const std::string& css_class = "");
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
std::string html_card(const std::string& name, const std::string& value);

}  // namespace tandem::report

#include "analysis/report/html.hpp"

namespace tandem::report {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string html_section(const std::string& name, const std::string& title, const std::string& body_html) {
  return "<section data-section=\"" + escape_html(name) + "\"><h2>" + escape_html(title) + "</h2>" + body_html +
         "</section>\n";
}

std::string html_paragraph(const std::string& text, const std::string& css_class) {
  return (css_class.empty() ? std::string("<p>") : "<p class=\"" + escape_html(css_class) + "\">") + escape_html(text) +
         "</p>";
}

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table><thead><tr>";
  for (const auto& h : header) out += "<th>" + escape_html(h) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td>" + escape_html(cell) + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string html_card(const std::string& name, const std::string& value) {
  return "<div class=\"card\"><div class=\"name\">" + escape_html(name) + "</div><div class=\"value\">" +
         escape_html(value) + "</div></div>";
}

}  // namespace tandem::report

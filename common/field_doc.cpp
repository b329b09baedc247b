#include "common/field_doc.hpp"

#include <algorithm>
#include <cstdio>

namespace tandem {

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string accepted(const FieldDoc& f) {
  if (f.range != nullptr)
    return "[" + number(f.range->min) + ", " + number(f.range->max) + "]" +
           (f.range->unit[0] != '\0' && f.range->unit[0] != '(' ? std::string(" ") + f.range->unit : "");
  if (f.count != nullptr) return "[" + std::to_string(f.count->min) + ", " + std::to_string(f.count->max) + "]";
  return "";
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

}  // namespace

std::string format_field_reference(const std::string& title, std::span<const FieldSection> sections) {
  std::string out = title + "\n";
  for (const FieldSection& section : sections) {
    out += "\n" + std::string(section.path[0] == '\0' ? "(top level)" : section.path) + ":\n";
    std::size_t name_width = 0;
    std::size_t value_width = 0;
    for (const FieldDoc& f : section.fields) {
      name_width = std::max(name_width, std::string(f.name).size());
      value_width = std::max(value_width, std::string(f.value).size());
    }
    for (const FieldDoc& f : section.fields) {
      const std::string range = accepted(f);
      out += "  " + padded(f.name, name_width + 1) + padded(f.value, value_width + 1) + "default " +
             f.default_value + "  " + f.meaning + (range.empty() ? "" : " (accepted: " + range + ")") + "\n";
    }
  }
  return out;
}

}  // namespace tandem

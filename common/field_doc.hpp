// The fields an input file's section accepts, with their values, units and defaults: the one
// table a reader checks keys against (YamlNode::only_keys) and `tandem fields` prints, so the
// reference can neither name a field the reader refuses nor miss one it accepts. A field's
// accepted range, where the reader checks one from common/input_limits.hpp, is the same constant.
#pragma once

#include <span>
#include <string>

#include "common/input_limits.hpp"

namespace tandem {

struct FieldDoc {
  const char* name;
  const char* value;          // type and unit as written in the file: "GB/s", "count", "a | b"
  const char* default_value;  // "required", "-" (optional, no default), or the default
  const char* meaning;        // what it sets, in a few words
  const limits::Range* range = nullptr;       // the checked range, when a number has one
  const limits::CountRange* count = nullptr;  // the checked range, when a count has one
};

// One section of a file: `path` is its place in the file ("node_groups[].nic").
struct FieldSection {
  const char* path;
  std::span<const FieldDoc> fields;
};

// A plain-text reference of the sections, one field a line, under `title`.
std::string format_field_reference(const std::string& title, std::span<const FieldSection> sections);

}  // namespace tandem

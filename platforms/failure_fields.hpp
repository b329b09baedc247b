// The fields of a failure profile (platforms/failures/*.yaml): what load_failure_profile accepts
// (it checks keys against these tables) and what `tandem fields failures` prints.
#pragma once

#include "common/field_doc.hpp"

namespace tandem::failure_fields {

inline constexpr limits::Range kObservedDays{1e-3, 1e5, "days"};
inline constexpr limits::CountRange kObservedUnits{1, 1 << 24};
inline constexpr limits::Range kInterruptions{0, 1e9, "interruptions"};

inline constexpr FieldDoc kRoot[] = {
    {"name", "text", "the file's stem", "the profile's name (scenarios name it)"},
    {"source", "text", "required", "the publication the counts come from"},
    {"observed", "section", "required", "the fleet and period the counts were observed on"},
    {"causes", "list", "required", "one entry per root cause"},
};

inline constexpr FieldDoc kObserved[] = {
    {"days", "days", "required", "length of the observation", &kObservedDays},
    {"devices", "count", "required", "devices observed", nullptr, &kObservedUnits},
    {"devices_per_node", "count", "required", "devices per node (divides devices)", nullptr, &kObservedUnits},
    {"leaf_switches", "count", "-", "leaf switches observed (needed by leaf_switch causes)", nullptr, &kObservedUnits},
};

inline constexpr FieldDoc kCause[] = {
    {"name", "text", "required", "the cause (\"Faulty GPU\"), once per profile"},
    {"scope", "device | node | leaf_switch | job", "required", "what one interruption takes down"},
    {"interruptions", "count", "required", "interruptions observed over the period", &kInterruptions},
    {"includes", "text", "\"\"", "what the publication counts under this cause"},
};

inline constexpr FieldSection kSections[] = {
    {"", kRoot},
    {"observed", kObserved},
    {"causes[]", kCause},
};

}  // namespace tandem::failure_fields

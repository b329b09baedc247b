// The sections of the HTML report (report.hpp), each a complete <section> element, or an empty
// string when the inputs do not allow it.
#pragma once

#include <string>

#include "analysis/report/report.hpp"

namespace tandem::report {

std::string summary_section(const ReportInputs& inputs);
std::string timelines_section(const ReportInputs& inputs);
std::string errors_section(const ReportInputs& inputs);
std::string breakdown_section(const ReportInputs& inputs);
std::string memory_section(const ReportInputs& inputs);
std::string search_section(const ReportInputs& inputs);
std::string goodput_section(const ReportInputs& inputs);  // goodput_section.cpp

}  // namespace tandem::report

// How every sub-command ends: bad input (a malformed file, an impossible strategy) is one clear
// message and exit status 2; anything else that fails is status 1 with its message.
#pragma once

#include <functional>

namespace tandem::cli {

int run_guarded(const std::function<int()>& command);

}  // namespace tandem::cli

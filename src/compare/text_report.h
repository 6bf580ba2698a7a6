// The human-readable report of a verdict, printed by `check` and `compare`.
//
//   std::cout << render_text(verdict, /*color=*/isatty(1));
//
// Order: the verdict line, the first divergence, the lane and why, every
// environment difference (determinism-relevant first), the findings, then a
// table of every series and probe field with its rule, failures, and the
// largest absolute and relative error and where.
#pragma once

#include <string>

#include "compare/verdict.h"

namespace lockstep {

/// Renders `verdict` as text; `color` adds ANSI colours (use only on a TTY).
std::string render_text(const Verdict& verdict, bool color);

}  // namespace lockstep

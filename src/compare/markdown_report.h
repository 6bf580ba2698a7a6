// A Markdown summary of a verdict, for a merge-request comment
// (GitLab Flavored Markdown).
//
//   std::string md = render_markdown(verdict);
//
// A heading with the verdict, the first divergence, the lane, the
// environment differences and the failing values as tables; passing
// values are summarised in one line so the comment stays short.
#pragma once

#include <string>

#include "compare/verdict.h"

namespace lockstep {

/// Markdown for one smoke's verdict.
std::string render_markdown(const Verdict& verdict);

}  // namespace lockstep

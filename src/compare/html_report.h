// A self-contained HTML page for one verdict: the verdict and first
// divergence, the lane, the environment differences, one SVG plot per
// training series (golden, run, tolerance band, first failing step marked)
// and the batch probe table. No scripts, fonts or other network resources:
// the file opens offline from a CI artifact.
//
//   std::string html = render_html(verdict, run, golden);
#pragma once

#include <string>
#include <vector>

#include "compare/verdict.h"
#include "record/run_record.h"

namespace lockstep {

/// The page. `run` and `golden` must be the records `verdict` was made from
/// (the verdict holds the judgement, the records the values to plot).
/// `provenance`: lines said under the two labels (who made each side, when
/// and why: `review` gives the pending and the current golden's).
std::string render_html(const Verdict& verdict, const RunRecord& run, const RunRecord& golden,
                        const std::vector<std::string>& provenance = {});

}  // namespace lockstep

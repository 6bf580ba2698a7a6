// JUnit XML for GitLab's test report widget (artifacts:reports:junit).
//
//   std::string xml = render_junit({verdict_a, verdict_b});
//
// One <testcase> per smoke x section x metric: classname
// "lockstep.<smoke>.<section>" (GitLab groups by it), name the metric or
// probe field; each equivalence lane one more, classname
// "lockstep.<smoke>.equivalence", name the lane (<skipped> when the golden
// failed first), and a lane's own comparison's rows under
// "lockstep.<smoke>.equivalence.<lane>.<section>". A failing testcase's <failure> carries the finding and the
// smoke's first divergence. Contract, structure and hash findings that have
// no metric row become testcases of their own. Text is XML-escaped
// (W3C XML 1.0 section 2.4); characters XML forbids are dropped.
#pragma once

#include <string>
#include <vector>

#include "compare/verdict.h"

namespace lockstep {

/// A <testsuites> document for the verdicts of one `check`.
std::string render_junit(const std::vector<Verdict>& verdicts);

}  // namespace lockstep

// What changed between a golden and its replacement, printed by `bless`
// so the reviewer of the golden commit sees the size of the change:
//
//   loss            max |change| 2.4e-07 @3, max rel 1.1e-07 @3; 0:1 <1e-7:6 <1e-5:3 <1e-3:0 >=1e-3:0
//
// Buckets count values by relative change |new-old|/|old| (absolute change
// when old is 0): exactly 0, < 1e-7, < 1e-5, < 1e-3, >= 1e-3.
#pragma once

#include <string>

#include "record/run_record.h"

namespace lockstep {

/// One line per series and per probe list, plus lines for series or hashes
/// present on one side only. Empty string when the records are identical.
std::string describe_changes(const RunRecord& old_record, const RunRecord& new_record);

}  // namespace lockstep

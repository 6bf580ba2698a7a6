// Is a golden set trustworthy? The audit behind `lockstep verify-goldens`.
//
//   GoldensAudit a = audit_goldens("goldens", "smoke");
//   for (const auto& p : a.problems) std::cerr << p << "\n";   // empty: OK
//
// A problem is listed when:
//   - a golden does not parse, has an unknown schema, or its content hash
//     does not match (edited by hand);
//   - a pending (*.golden.new) or temporary file lies in the goldens folder;
//   - a golden belongs to no smoke config, its step count or a field of its
//     config that determines the values (config.values_xxh3) no longer
//     matches the config, or it is filed under another name/platform (an
//     edit that moves no value — a looser tolerance, a default written out,
//     `repeat` — is no problem, as for check; a moved data file whose
//     content check compares is a note);
//   - it holds NaN/Inf and the smoke does not allow it (first_nonfinite);
//   - a platform the smoke declares in "platforms" has no golden;
//   - after a stack upgrade one platform's golden was refreshed and another
//     of the same device left on the old stack (torch.version or the
//     LibTorch library hash differs; the older golden is named stale).
// A goldens lock whose holder has exited (a killed bless) is a note: it
// holds nothing, and the next bless or accept takes it over.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gate/shard.h"

namespace lockstep {

/// What audit_goldens() found.
struct GoldensAudit {
  std::vector<std::string> problems;  ///< one sentence each, naming the file; empty: OK
  std::vector<std::string> notes;     ///< facts that are no problem (a stale lock, a moved data file)
  size_t goldens = 0;                 ///< goldens read and filed under a known smoke
  size_t smokes = 0;                  ///< smoke configs in the smoke folder
};

/// Audits every file under `goldens_dir` against the smoke configs in
/// `smoke_dir` ("": smoke/ beside the goldens folder). With `shard` (count
/// > 0), only the goldens of the smokes `check --shard` gives that shard
/// (shard_members), and files that belong to no smoke in shard 1: each CI
/// shard verifies its own smokes. Throws exit-2 Error when either folder
/// is missing or a smoke config is malformed.
GoldensAudit audit_goldens(const std::string& goldens_dir, const std::string& smoke_dir, Shard shard = {});

}  // namespace lockstep

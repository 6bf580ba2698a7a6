// `lockstep verify-goldens [DIR]`: prints the audit of gate/verify_goldens.h
// (every problem on stderr) and exits 2 when it found any.
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "gate/shard.h"
#include "gate/verify_goldens.h"

namespace lockstep {

int verify_goldens_command(const VerifyOptions& o) {
  Shard shard;
  if (o.shard_given) shard = parse_shard(o.shard);
  GoldensAudit a = audit_goldens(o.goldens_dir, o.smoke_dir, shard);
  for (const auto& n : a.notes) std::cout << "verify-goldens: note: " << n << "\n";
  if (a.problems.empty()) {
    std::cout << "verify-goldens: " << a.goldens << " golden(s) for " << a.smokes << " smoke(s) in "
              << o.goldens_dir << (o.shard.empty() ? std::string() : " (shard " + o.shard + ")") << ": OK\n";
    return 0;
  }
  for (const auto& p : a.problems) std::cerr << "verify-goldens: " << p << "\n";
  std::cerr << "verify-goldens: " << a.problems.size() << " problem(s)\n";
  return to_int(ExitCode::kBadInput);
}

}  // namespace lockstep

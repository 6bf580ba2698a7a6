// The last step of every producer of a run record (plan/record_producer.h):
// the record's identity (smoke, config hash, seed, device, steps), the
// config's value fields and hash (never part of the stack: a change always
// fails, compare/compare.h), and the platform key from the finished
// fingerprint. One stamp, so a built-in smoke's record, a team trainer's
// and a rank group's merge name themselves the same way.
//
//   rec.fingerprint = capture_fingerprint(...);       // everything the producer knows first
//   finish_record(cfg, {base_seed(cfg), cfg.steps}, rec);
#pragma once

#include <cstdint>
#include <utility>

#include "record/run_record.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// Who made the record: the base seed ({value, overridden by
/// $LOCKSTEP_SEED}, smoke_config.h's base_seed()) and the steps it claims
/// (0 for a built-in data-only record).
struct RecordIdentity {
  std::pair<uint64_t, bool> seed;
  int64_t steps = 0;
};

/// Stamps `rec` from `config` and `id`: smoke, config_hash, seed,
/// seed_overridden, device, steps, config (the value fields),
/// fingerprint["config.values_xxh3"] (and vary.* for a varied run:
/// spec/run_variation.h's variation_fields), platform = platform_key(fingerprint)
/// (record/platform_key.h) and stack = $LOCKSTEP_STACK (golden_store.h).
/// Call it after every other fingerprint field is set. Throws BadUsage only
/// for a malformed LOCKSTEP_STACK (main() refuses one before any run).
void finish_record(const SmokeConfig& config, const RecordIdentity& id, RunRecord& rec);

}  // namespace lockstep

#include "smoke/finish_record.h"

#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {

void finish_record(const SmokeConfig& config, const RecordIdentity& id, RunRecord& rec) {
  rec.smoke = config.name;
  rec.config_hash = config.config_hash;
  rec.seed = id.seed.first;
  rec.seed_overridden = id.seed.second;
  rec.device = config.device;
  rec.steps = id.steps;
  rec.config = config.values_fields;
  rec.fingerprint["config.values_xxh3"] = {config.values_hash, false, true};
  // A varied run (run --vary, check's perturbed repeat) names what it
  // varied; informational: a repeat's fingerprint is never compared.
  for (const auto& [k, v] : variation_fields(config.vary)) rec.fingerprint[k] = {v, false, false};
  rec.platform = platform_key(rec.fingerprint);
  rec.stack = stack_label();
}

}  // namespace lockstep

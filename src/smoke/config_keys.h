// The one table of smoke-config keys, in the spirit of ccache's
// k_config_key_table: every key a smoke config accepts, by JSON path, with
// whether it moves config.values_xxh3 (the hash of what determines a run's
// values: a golden of other values fails as "input changed" and
// verify-goldens asks for a re-bless) and one line of documentation. The
// parser (smoke_config.cpp) accepts exactly the keys listed here
// (keys_under); tests/smoke/config_keys_test.cpp changes every key and
// requires the hash to move exactly for the keys that say so; the keys
// that do not are listed in docs/smoke-config.md, "Keys outside the value
// hash".
//
//   for (const ConfigKey& k : smoke_config_keys()) std::cout << k.path << (k.moves_values ? " *" : "") << "\n";
//   obj.allow_keys(keys_under("data.augment"));   // shift, flip, noise_std, normalize
#pragma once

#include <string_view>
#include <vector>

namespace lockstep {

/// One accepted key.
struct ConfigKey {
  std::string_view path;  ///< JSON path from the config's root, "data.augment.shift"
  bool moves_values;      ///< part of values_json() (config.values_xxh3) where the section applies
  std::string_view doc;   ///< one line: what it sets, or why it is outside the value hash
};

/// Every key, parents before their children. A key whose value is an
/// object of free names (trainer.env, trainer.metrics.series) or a section
/// parsed by another layer (tolerance: compare/tolerance_policy.h) is one
/// row.
const std::vector<ConfigKey>& smoke_config_keys();

/// The names directly under `section` ("" for the root), in table order:
/// what JsonView::allow_keys accepts there.
std::vector<std::string_view> keys_under(std::string_view section);

}  // namespace lockstep

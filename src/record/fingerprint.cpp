#include "record/fingerprint.h"

#include <algorithm>
#include <set>

#include "core/json_io.h"

namespace lockstep {

std::vector<FieldDiff> diff_fingerprints(const Fingerprint& golden, const Fingerprint& run) {
  std::set<std::string> names;
  for (const auto& [k, _] : golden) names.insert(k);
  for (const auto& [k, _] : run) names.insert(k);
  std::vector<FieldDiff> out;
  for (const auto& name : names) {
    auto g = golden.find(name);
    auto r = run.find(name);
    FieldDiff d{name, g == golden.end() ? "(missing)" : g->second.value,
                r == run.end() ? "(missing)" : r->second.value,
                (g != golden.end() && g->second.relevant) || (r != run.end() && r->second.relevant)};
    if (d.golden != d.run) out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const FieldDiff& a, const FieldDiff& b) { return a.relevant > b.relevant; });
  return out;
}

nlohmann::json to_json(const Fingerprint& fp) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, f] : fp) out[k] = {{"value", f.value}, {"relevant", f.relevant}};
  return out;
}

Fingerprint fingerprint_from_json(const JsonView& node) {
  Fingerprint fp;
  for (const auto& key : node.keys()) {
    JsonView f = node.at(key);
    f.allow_keys({"value", "relevant"});
    fp[key] = FingerprintField{f.at("value").as_string(), f.at("relevant").as_bool()};
  }
  return fp;
}

}  // namespace lockstep

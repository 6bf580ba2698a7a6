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
    bool input = (g != golden.end() && g->second.input) || (r != run.end() && r->second.input);
    // Which fields are relevant is lockstep's to say, in the run it made
    // now; a golden's own flags speak only for fields the run lacks.
    bool relevant = !input && (r != run.end() ? r->second.relevant : g != golden.end() && g->second.relevant);
    FieldDiff d{name, g == golden.end() ? "(missing)" : g->second.value,
                r == run.end() ? "(missing)" : r->second.value, relevant, input};
    // A field one side lacks and the other could not read ("(absent: no
    // NVIDIA driver)", a field added since) or an environment variable
    // unset ("(unset)", one a newer lockstep records) holds no value on
    // either side.
    auto no_value = [](const std::string& v) {
      return v == "(missing)" || v == "(unset)" || v.rfind("(absent: ", 0) == 0;
    };
    if (d.golden != d.run && !(no_value(d.golden) && no_value(d.run) && (d.golden == "(missing)" || d.run == "(missing)")))
      out.push_back(d);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const FieldDiff& a, const FieldDiff& b) { return diff_rank(a) < diff_rank(b); });
  return out;
}

int diff_rank(const FieldDiff& d) {
  // The framework, CUDA, cuDNN and driver versions: what a stack upgrade changes.
  static const char* const kVersions[] = {"torch.version",     "python.torch",          "cuda.runtime",
                                          "python.torch.cuda", "cuda.cudnn",            "python.torch.cudnn",
                                          "nvidia.driver_version", "cuda.driver_api_version"};
  bool package = d.name.rfind("python.packages.", 0) == 0;
  if (d.input) return 0;
  if (std::find(std::begin(kVersions), std::end(kVersions), d.name) != std::end(kVersions)) return 1;
  if (d.name.rfind("determinism.", 0) == 0) return 2;
  if (d.relevant) return package ? 3 : 4;
  return package ? 6 : 5;  // a package the trainer did not import: last
}

nlohmann::json to_json(const Fingerprint& fp) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, f] : fp) {
    out[k] = {{"value", f.value}, {"relevant", f.relevant}};
    if (f.input) out[k]["input"] = true;
  }
  return out;
}

Fingerprint fingerprint_from_json(const JsonView& node) {
  Fingerprint fp;
  const std::vector<std::string> keys = node.keys();
  if (keys.size() > kMaxFingerprintFields)
    node.fail("at most " + std::to_string(kMaxFingerprintFields) + " fields, got " + std::to_string(keys.size()));
  for (const auto& key : keys) {
    JsonView f = node.at(key);
    f.allow_keys({"value", "relevant", "input"});
    FingerprintField field{f.at("value").as_string(), f.at("relevant").as_bool(), false};
    if (f.has("input")) {
      field.input = f.at("input").as_bool();
      if (field.input && field.relevant)
        f.at("relevant").fail("false for an input field (an input is never part of the stack)");
    }
    fp[key] = field;
  }
  return fp;
}

}  // namespace lockstep

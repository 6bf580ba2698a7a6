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
    bool relevant = !input && ((g != golden.end() && g->second.relevant) || (r != run.end() && r->second.relevant));
    FieldDiff d{name, g == golden.end() ? "(missing)" : g->second.value,
                r == run.end() ? "(missing)" : r->second.value, relevant, input};
    // A field one side lacks and the other could not read ("(absent: no
    // NVIDIA driver)", a field added since) holds no value on either side.
    auto no_value = [](const std::string& v) { return v == "(missing)" || v.rfind("(absent: ", 0) == 0; };
    if (d.golden != d.run && !(no_value(d.golden) && no_value(d.run) && (d.golden == "(missing)" || d.run == "(missing)")))
      out.push_back(d);
  }
  auto rank = [](const FieldDiff& d) { return d.input ? 0 : d.relevant ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const FieldDiff& a, const FieldDiff& b) { return rank(a) < rank(b); });
  return out;
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
  for (const auto& key : node.keys()) {
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

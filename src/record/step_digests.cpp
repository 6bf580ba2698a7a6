#include "record/step_digests.h"

#include <map>

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"

namespace lockstep {

std::string manifest_digest(const std::vector<std::pair<std::string, std::string>>& lines) {
  std::string text;
  for (const auto& [name, digest] : lines) text += name + " " + digest + "\n";
  return xxh3_128_hex(text.data(), text.size());
}

nlohmann::json to_json(const StepDigests& d) {
  nlohmann::json out = {{"params", d.params}, {"grads", d.grads}};
  if (!d.steps.empty()) out["steps"] = d.steps;
  return out;
}

namespace {

std::vector<std::string> digest_list(const JsonView& list) {
  list.expect_array();
  std::vector<std::string> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    std::string hex = list.at(i).as_string();
    if (!is_hex_digest(hex, 32))
      list.at(i).fail("an XXH3-128 digest (32 lowercase hex digits), got \"" + input_excerpt(hex) + "\"");
    out.push_back(std::move(hex));
  }
  return out;
}

}  // namespace

StepDigests step_digests_from_json(const JsonView& n, int64_t record_steps) {
  n.expect_object();
  n.allow_keys({"params", "grads", "steps"});
  StepDigests d;
  d.params = digest_list(n.at("params"));
  d.grads = digest_list(n.at("grads"));
  if (d.grads.size() != d.params.size())
    n.at("grads").fail("one digest per entry of params (" + std::to_string(d.params.size()) + "), got " +
                       std::to_string(d.grads.size()));
  if (n.has("steps")) {
    JsonView steps = n.at("steps");
    steps.expect_array();
    if (steps.size() != d.params.size())
      steps.fail("one step per entry of params (" + std::to_string(d.params.size()) + "), got " +
                 std::to_string(steps.size()));
    for (size_t i = 0; i < steps.size(); ++i) {
      int64_t k = steps.at(i).as_int(0, record_steps - 1);
      if (!d.steps.empty() && k <= d.steps.back())
        steps.at(i).fail("steps in increasing order (after " + std::to_string(d.steps.back()) + "), got " +
                         std::to_string(k));
      d.steps.push_back(k);
    }
  } else if (static_cast<int64_t>(d.params.size()) != record_steps) {
    n.at("params").fail("one digest per step (" + std::to_string(record_steps) + ", the record's steps), got " +
                        std::to_string(d.params.size()) + " (give \"steps\" for digests of some steps only)");
  }
  return d;
}

void compact_steps(StepDigests& d, int64_t record_steps) {
  if (d.steps.empty() || static_cast<int64_t>(d.steps.size()) != record_steps) return;
  for (size_t i = 0; i < d.steps.size(); ++i)
    if (d.steps[i] != static_cast<int64_t>(i)) return;
  d.steps.clear();
}

DigestDivergence first_digest_divergence(const StepDigests& run, const StepDigests& reference) {
  DigestDivergence out;
  std::map<int64_t, size_t> at;
  for (size_t i = 0; i < reference.params.size(); ++i) at[reference.step_of(i)] = i;
  for (size_t i = 0; i < run.params.size(); ++i) {
    auto it = at.find(run.step_of(i));
    if (it == at.end()) continue;
    ++out.common_steps;
    int64_t step = it->first;
    if (out.grads_step < 0 && run.grads[i] != reference.grads[it->second]) out.grads_step = step;
    if (out.params_step < 0 && run.params[i] != reference.params[it->second]) out.params_step = step;
  }
  return out;
}

}  // namespace lockstep

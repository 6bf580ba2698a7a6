#include "compare/lane.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {

std::string shared_tool_version(const RunRecord& run, const RunRecord& golden) {
  auto a = run.fingerprint.find("lockstep.version");
  auto b = golden.fingerprint.find("lockstep.version");
  if (a == run.fingerprint.end() || b == golden.fingerprint.end() || a->second.value != b->second.value) return "";
  return a->second.value;
}

namespace {

// What an input field names, for a person: "data file wine.csv".
std::string input_label(const std::string& field, const RunRecord& run) {
  auto info = [&](const char* key) {
    auto it = run.fingerprint.find(key);
    return it == run.fingerprint.end() ? std::string() : " " + it->second.value;
  };
  if (field == "data.file_xxh3") return "data file" + info("data.path");
  if (field == "trainer.inputs_xxh3") return "data files of trainer.inputs";
  if (field == "model.torchscript_xxh3") return "TorchScript model" + info("model.path") + " (code and parameters)";
  if (field == "config.values_xxh3")
    return "smoke config " + run.smoke + " (a field that determines the values: seed, steps, data, model, "
           "optimiser, ...)";
  return field;
}

// trainer.inputs' files that differ, for a person: "data/train.bin
// changed, data/extra.bin added" (at most four named, then how many more).
std::string changed_input_files(const RunRecord& run, const RunRecord& golden) {
  static const std::string prefix = "trainer.input.";
  auto files = [&](const RunRecord& r) {
    std::map<std::string, std::string> out;
    for (auto it = r.fingerprint.lower_bound(prefix); it != r.fingerprint.end() && it->first.rfind(prefix, 0) == 0; ++it)
      out[it->first.substr(prefix.size())] = it->second.value;
    return out;
  };
  std::map<std::string, std::string> now = files(run), then = files(golden);
  std::vector<std::string> changes;
  for (const auto& [path, hash] : now) {
    auto g = then.find(path);
    if (g == then.end()) changes.push_back(path + " added");
    else if (g->second != hash) changes.push_back(path + " changed");
  }
  for (const auto& [path, _] : then)
    if (!now.count(path)) changes.push_back(path + " removed");
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i) out += (i ? ", " : "") + changes[i];
  if (changes.size() > 4) out += ", and " + std::to_string(changes.size() - 4) + " more";
  return out;
}

// The config fields that differ, for a person: "optimizer.lr 0.01 → 0.011,
// seed 1 → 7" (at most four named, then how many more); "" when either
// record lacks its fields (a golden made before records kept them) or
// none differs.
// An array field's changed elements, "trainer.command[5] "{data}/x" →
// "{config_dir}/x"", when both sides are arrays of one length; elements
// added or removed as one change past what both share at either end,
// "trainer.command[8] added "--lr", "0.051""; "" when either is no array.
std::vector<std::string> changed_elements(const std::string& key, const std::string& golden, const std::string& run) {
  nlohmann::json g = nlohmann::json::parse(golden, nullptr, false), r = nlohmann::json::parse(run, nullptr, false);
  if (!g.is_array() || !r.is_array()) return {};
  if (g.size() != r.size()) {
    size_t head = 0, tail = 0;
    while (head < g.size() && head < r.size() && g[head] == r[head]) ++head;
    while (tail < g.size() - head && tail < r.size() - head && g[g.size() - 1 - tail] == r[r.size() - 1 - tail]) ++tail;
    auto part = [&](const nlohmann::json& a) {
      std::string out;
      for (size_t i = head; i < a.size() - tail; ++i) out += (i > head ? ", " : "") + canonical_dump(a[i]);
      return input_excerpt(out);
    };
    std::string at = key + "[" + std::to_string(head) + "] ";
    if (head + tail == g.size()) return {at + "added " + part(r)};
    if (head + tail == r.size()) return {at + "removed " + part(g)};
    return {at + part(g) + " → " + part(r)};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != r[i])
      out.push_back(key + "[" + std::to_string(i) + "] " + input_excerpt(canonical_dump(g[i])) + " → " +
                    input_excerpt(canonical_dump(r[i])));
  return out;
}

std::string changed_config_fields(const RunRecord& run, const RunRecord& golden) {
  if (run.config.empty() || golden.config.empty()) return "";
  std::vector<std::string> changes;
  for (const auto& key : key_union(golden.config, run.config)) {
    auto g = golden.config.find(key);
    auto r = run.config.find(key);
    if (g != golden.config.end() && r != run.config.end() && g->second != r->second) {
      std::vector<std::string> elements = changed_elements(key, g->second, r->second);
      if (!elements.empty()) {
        changes.insert(changes.end(), elements.begin(), elements.end());
        continue;
      }
    }
    std::string gv = g == golden.config.end() ? "(missing)" : input_excerpt(g->second);
    std::string rv = r == run.config.end() ? "(missing)" : input_excerpt(r->second);
    if (gv != rv) changes.push_back(key + " " + gv + " → " + rv);
  }
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i) out += (i ? ", " : "") + changes[i];
  if (changes.size() > 4) out += ", and " + std::to_string(changes.size() - 4) + " more";
  return out;
}

// The planted changes `run` was made with ("perturb \"parameter\"",
// "lr_scale 2": `lockstep run --perturb`, `--lr-scale`, selftest,
// calibrate's detection search), "" for none. The config records them as
// inputs, so a golden fails them as an input change; said as what they
// are, not as an edit of the smoke config.
std::string planted_changes(const RunRecord& run) {
  std::string out;
  for (const char* key : {"perturb", "lr_scale"})
    if (auto it = run.config.find(key); it != run.config.end())
      out += (out.empty() ? "" : ", ") + std::string(key) + " " + input_excerpt(it->second);
  return out;
}

// Whether changed_config_fields' list names planted changes only (or
// nothing: a golden without the config's fields cannot say).
bool only_planted(const std::string& fields) {
  size_t at = 0;
  while (at < fields.size()) {
    if (fields.compare(at, 8, "perturb ") != 0 && fields.compare(at, 9, "lr_scale ") != 0) return false;
    const size_t next = fields.find(", ", at);  // values are excerpts: a ", " inside one ends the check early
    if (next == std::string::npos) break;
    at = next + 2;
  }
  return true;
}

// "xxh3" for a hash field, "value" otherwise.
std::string input_hash_word(const std::string& field) {
  return field.size() > 5 && field.compare(field.size() - 5, 5, "_xxh3") == 0 ? "xxh3" : "value";
}

// The leading "major.minor.patch" of a version string as numbers
// ("2.6.0+debian" and "2.6.0" are one version; "1.13.0a0" is 1.13.0);
// empty when it does not start with a number.
std::vector<long> version_numbers(const std::string& text) {
  std::vector<long> out;
  size_t i = 0;
  while (out.size() < 3 && i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    long n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000) n = n * 10 + (text[i++] - '0');
    out.push_back(n);
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return out;
}

// The first lockstep release, and the first version that records each
// input field: a golden can predate a field only by being of a release
// older than it. A field not listed is taken to be as new as the run.
constexpr const char* kFirstRelease = "0.1.0";
std::string input_field_since(const std::string& field, const std::string& run_version) {
  static const char* const kSinceFirst[] = {"config.values_xxh3", "data.file_xxh3", "trainer.inputs_xxh3",
                                            "model.torchscript_xxh3"};
  for (const char* f : kSinceFirst)
    if (field == f) return kFirstRelease;
  return run_version;
}

// "" when the golden may predate input field `field` (made by a lockstep
// release older than the first to record it: a note), else what says it
// cannot, for "lacks the input field F, which <why>": the version that
// made it records the field, it names no lockstep release, or none at all
// (a field every release writes). A golden edited to drop an input field
// and claim an older version fails as one that only drops it.
std::string why_not_predating(const RunRecord& run, const RunRecord& golden, const std::string& field) {
  auto theirs = golden.fingerprint.find("lockstep.version");
  auto ours = run.fingerprint.find("lockstep.version");
  if (theirs == golden.fingerprint.end())
    return "every lockstep release records, as it records lockstep.version, which the golden lacks too";
  const std::vector<long> made_by = version_numbers(theirs->second.value);
  if (made_by.size() != 3 || made_by < version_numbers(kFirstRelease))
    return "every lockstep release records (the golden says it was made by lockstep " +
           input_excerpt(theirs->second.value) + ", which is no release: the first is " + kFirstRelease + ")";
  const std::string since = input_field_since(field, ours == run.fingerprint.end() ? "" : ours->second.value);
  const std::vector<long> field_from = version_numbers(since);
  if (!field_from.empty() && made_by < field_from) return "";
  return "lockstep " + theirs->second.value + " (the version that made it) always records";
}

}  // namespace

bool judge_inputs(const RunRecord& run, const RunRecord& golden, Verdict& v) {
  // Inputs never choose the lane: a changed input is the change under
  // test, and fails whatever the values say. A config whose only changed
  // field says where an input lives (data.path), that input's content
  // unchanged, is the same input moved (is_location_field).
  bool content_changed = false, moved_only = false;
  for (const auto& d : v.env_diffs) content_changed = content_changed || (d.input && d.name != "config.values_xxh3");
  for (const auto& d : v.env_diffs) {
    if (!d.input) continue;
    if (d.name == "config.values_xxh3" && !content_changed && !run.config.empty() && !golden.config.empty()) {
      std::vector<std::string> fields = differing_config_fields(golden.config, run.config);
      bool moved = !fields.empty() && std::all_of(fields.begin(), fields.end(), is_location_field);
      if (moved) {
        moved_only = true;
        auto value = [](const std::map<std::string, std::string>& m, const std::string& f) {
          auto it = m.find(f);
          return it == m.end() ? std::string("(missing)") : input_excerpt(it->second);
        };
        for (const auto& f : fields)
          v.notes.push_back(f + " moved: " + value(golden.config, f) + " → " + value(run.config, f) +
                            "; its content is unchanged, so the input is the same");
        continue;
      }
    }
    if (std::string why = d.golden == "(missing)" ? why_not_predating(run, golden, d.name) : ""; !why.empty())
      v.findings.push_back({Section::kInput, d.name, -1,
                            "the " + v.reference_word + " lacks the input field " + d.name + ", which " + why +
                                ": taken out by hand; re-bless it"});
    else if (d.golden == "(missing)")
      v.notes.push_back("the golden predates the input field " + d.name + " (run: " + d.run +
                        "); re-bless to pin it");
    else if (std::string planted = d.name == "config.values_xxh3" ? planted_changes(run) : "";
             !planted.empty() && planted_changes(golden).empty() && only_planted(changed_config_fields(run, golden)))
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: the " + v.subject_word + " was made with a planted change (" + planted +
                                ": lockstep run --perturb / --lr-scale), which the " + v.reference_word +
                                " was not (" + input_hash_word(d.name) + " " + d.golden + " → " + d.run + ")"});
    else if (std::string fields = d.name == "config.values_xxh3" ? changed_config_fields(run, golden) : "";
             !fields.empty())
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: smoke config " + run.smoke + ": " + fields + " (" +
                                input_hash_word(d.name) + " " + d.golden + " → " + d.run + ")"});
    else if (std::string files = d.name == "trainer.inputs_xxh3" ? changed_input_files(run, golden) : "";
             !files.empty())
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: data files of trainer.inputs: " + files + " (" + input_hash_word(d.name) +
                                " " + d.golden + " → " + d.run + ")"});
    else {
      v.findings.push_back({Section::kInput, d.name, -1,
                            "input changed: " + input_label(d.name, run) + ", " + input_hash_word(d.name) + " " +
                                d.golden + " → " + d.run});
      if (d.name == "config.values_xxh3" && golden.config.empty() && !run.config.empty())
        v.notes.push_back("the " + v.reference_word + " predates the config fields records keep: which field "
                          "changed cannot be named; re-bless it to have changed inputs named by field");
    }
  }

  return moved_only;
}

namespace {

// "(missing)" or "unsupported (...)": a contract setting this side's
// LibTorch (or torch) did not have, so it holds no value to compare.
bool no_contract_value(const std::string& value) {
  return value == "(missing)" || value.rfind("unsupported", 0) == 0;
}

// The contract settings whose presence depends on the torch version: the
// only ones a version change may leave without a value on one side
// (fill_uninitialized_memory from 2.1/2.2, warn_only from 1.11,
// float32_matmul_precision from 1.12, the legacy TF32 getters that newer
// torch may refuse). Never lockstep's own (mode, threads, workspace).
bool version_dependent_setting(const std::string& key) {
  static const char* const kKeys[] = {"fill_uninitialized_memory", "deterministic_algorithms_warn_only",
                                      "float32_matmul_precision", "allow_tf32_cublas", "allow_tf32_cudnn"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

// The contract settings that are a stack axis, not another contract: the
// intra- and inter-op thread counts change the order of parallel
// reductions, never what is computed, so a run under other thread counts
// than its golden is compared in the cross-stack lane under the smoke's
// tolerances -- the spread `calibrate --axis threads=...` measures
// (docs/comparison.md, "One rule for calibrate and check").
bool stack_setting(const std::string& key) { return key == "intra_op_threads" || key == "inter_op_threads"; }

// "LibTorch 1.13.0 → 2.6.0" (or "torch ..." for a trainer's record) when
// both sides name a framework version and the numbers differ; "" else (a
// suffix or a space alone is no version change).
std::string framework_change(const RunRecord& run, const RunRecord& golden) {
  std::string out;
  for (const auto& [field, label] : {std::pair<const char*, const char*>{"torch.version", "LibTorch"},
                                     {"python.torch", "torch"}}) {
    auto g = golden.fingerprint.find(field);
    auto r = run.fingerprint.find(field);
    if (g == golden.fingerprint.end() || r == run.fingerprint.end()) continue;
    std::vector<long> gv = version_numbers(g->second.value), rv = version_numbers(r->second.value);
    if (gv.empty() || rv.empty() || gv == rv) continue;
    out += (out.empty() ? "" : ", ") + std::string(label) + " " + g->second.value + " → " + r->second.value;
  }
  return out;
}

}  // namespace

void choose_lane(const RunRecord& run, const RunRecord& golden, Verdict& v) {
  v.env_diffs = diff_fingerprints(golden.fingerprint, run.fingerprint);
  // A version-dependent setting one side's torch lacks (fill_uninitialized
  // _memory is "unsupported" before 2.2) is part of that torch's version
  // change: no contract mismatch, the stack lane says it. Everything else
  // that differs, a value against none included, is another contract.
  const std::string version_change = framework_change(run, golden);
  std::vector<std::string> contract_diffs;
  for (const auto& key : key_union(golden.contract, run.contract)) {
    auto g = golden.contract.find(key);
    auto r = run.contract.find(key);
    std::string gv = g == golden.contract.end() ? "(missing)" : g->second;
    std::string rv = r == run.contract.end() ? "(missing)" : r->second;
    if (gv == rv || (no_contract_value(gv) && no_contract_value(rv))) continue;  // neither holds a value
    if (stack_setting(key)) {
      // The fingerprint's determinism.<key> says it; a record without one
      // (imported, older) still lands in the cross-stack lane.
      const std::string field = "determinism." + key;
      if (std::none_of(v.env_diffs.begin(), v.env_diffs.end(), [&](const FieldDiff& d) { return d.name == field; })) {
        v.env_diffs.push_back({field, gv, rv, true, false});
        std::sort(v.env_diffs.begin(), v.env_diffs.end(), [](const FieldDiff& a, const FieldDiff& b) {
          return std::make_pair(diff_rank(a), a.name) < std::make_pair(diff_rank(b), b.name);
        });
      }
      continue;
    }
    if (!version_change.empty() && version_dependent_setting(key) &&
        no_contract_value(gv) != no_contract_value(rv)) {
      v.notes.push_back("contract." + key + ": " + v.reference_word + " " + gv + ", " + v.subject_word + " " + rv +
                        ": a setting one side's torch does not have, part of the version change (" + version_change +
                        "), compared under the smoke's tolerances");
      continue;
    }
    contract_diffs.push_back(key);
    v.findings.push_back({Section::kContract, "contract." + key, -1,
                          v.reference_word + " " + gv + ", " + v.subject_word + " " + rv +
                              ": a run is never accepted against a golden made under another "
                              "determinism contract"});
  }
  bool moved_only = judge_inputs(run, golden, v);
  size_t relevant = 0;
  for (const auto& d : v.env_diffs) relevant += d.relevant ? 1 : 0;

  // The same input, moved: not listed as a changed input (the note says it).
  if (moved_only)
    v.env_diffs.erase(std::remove_if(v.env_diffs.begin(), v.env_diffs.end(),
                                     [](const FieldDiff& d) { return d.name == "config.values_xxh3"; }),
                      v.env_diffs.end());
  if (!contract_diffs.empty()) {
    v.lane = Lane::kContractMismatch;
    std::string named;
    for (size_t i = 0; i < contract_diffs.size() && i < 3; ++i) {
      const std::string& k = contract_diffs[i];
      auto value = [&k](const std::map<std::string, std::string>& m) {
        auto it = m.find(k);
        return it == m.end() ? std::string("(missing)") : it->second;
      };
      named += std::string(i ? ", " : " (") + k + " " + value(golden.contract) + " → " + value(run.contract);
    }
    named += contract_diffs.size() > 3 ? ", ...)" : ")";
    v.lane_reason = std::to_string(contract_diffs.size()) + " determinism contract setting(s) differ" + named +
                    "; values are compared exactly to locate the first divergence";
  } else if (relevant == 0) {
    v.lane = Lane::kSameStack;
    v.lane_reason = "every determinism-relevant fingerprint field matches the " + v.reference_word;
  } else {
    v.lane = Lane::kCrossStack;
    // The fields in diff_fingerprints' order: versions first.
    std::string named;
    size_t shown = 0;
    for (const auto& d : v.env_diffs) {
      if (!d.relevant || shown == 3) continue;
      named += std::string(shown++ ? ", " : " (") + d.name + " " + d.golden + " → " + d.run;
    }
    named += relevant > 3 ? ", ...)" : ")";
    v.lane_reason = std::to_string(relevant) + " determinism-relevant fingerprint field(s) differ" + named +
                    ": configured tolerances apply";
  }
}

}  // namespace lockstep

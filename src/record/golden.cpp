#include "record/golden.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "record/platform_key.h"
#include "record/series_file.h"

namespace lockstep {

nlohmann::json golden_body_json(const Golden& g) {
  nlohmann::json body = to_json(g.record);
  const Provenance& p = g.provenance;
  body["provenance"] = {{"reason", p.reason},
                        {"created_utc", p.created_utc},
                        {"git_commit", p.git_commit},
                        {"git_author", p.git_author},
                        {"tool_version", p.tool_version},
                        {"allow_dirty", p.allow_dirty},
                        {"runs", p.runs}};
  if (!p.seeds.empty()) body["provenance"]["seeds"] = p.seeds;
  // Optional: absent in goldens made before they were recorded.
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"action", &p.action},
                                   {"replaces", &p.replaces},
                                   {"ci_job_url", &p.ci_job_url},
                                   {"ci_runner", &p.ci_runner},
                                   {"imported_from", &p.imported_from},
                                   {"narrower", &p.narrower}})
    if (!value->empty()) body["provenance"][key] = *value;
  return body;
}

std::string golden_content_hash(const nlohmann::json& body) {
  std::string canon = canonical_dump(body);
  return xxh3_128_hex(canon.data(), canon.size());
}

namespace {

// A golden's "provenance" block; `seed` is its record's (a multi-seed
// golden lists it first). Exit 2 naming the field.
Provenance provenance_from_json(JsonView p, uint64_t seed) {
  Provenance out;
  p.allow_keys({"reason", "created_utc", "git_commit", "git_author", "tool_version", "allow_dirty",
                "runs", "seeds", "action", "replaces", "ci_job_url", "ci_runner", "imported_from", "narrower"});
  if (p.has("action")) out.action = p.at("action").as_enum({"bless", "accept", "check", "import"});
  // Optional, and never empty when present.
  for (const auto& [key, field, what] :
       {std::tuple<const char*, std::string*, const char*>{"imported_from", &out.imported_from,
                                                           "the imported file's format and path (non-empty)"},
        {"narrower", &out.narrower, "what the replaced golden checked and this one does not (non-empty)"}})
    if (p.has(key)) {
      *field = p.at(key).as_string();
      if (field->empty()) p.at(key).fail(what);
    }
  if (p.has("replaces")) {
    out.replaces = p.at("replaces").as_string();
    if (!is_hex_digest(out.replaces, 32))
      p.at("replaces").fail("the replaced golden's content_hash (32 lowercase hex digits)");
  }
  if (p.has("ci_job_url")) out.ci_job_url = p.at("ci_job_url").as_string();
  if (p.has("ci_runner")) out.ci_runner = p.at("ci_runner").as_string();
  // What bless, accept, import and check write, and nothing else: the
  // content hash is unkeyed, so a hand-made provenance must at least read
  // as one lockstep could have written.
  out.reason = p.at("reason").as_string();
  if (is_blank_text(out.reason))
    p.at("reason").fail("why the golden was made (bless and accept require --reason)");
  out.created_utc = p.at("created_utc").as_string();
  if (!is_utc_time(out.created_utc))
    p.at("created_utc").fail("an ISO 8601 UTC time such as 2026-12-03T02:00:00Z, got \"" +
                             input_excerpt(out.created_utc) + "\"");
  out.git_commit = p.at("git_commit").as_string();
  if (!is_hex_digest(out.git_commit, 40) && !is_hex_digest(out.git_commit, 64) && out.git_commit != "(no commits)" &&
      out.git_commit.rfind("(absent: ", 0) != 0)
    p.at("git_commit").fail("a commit id (40 or 64 lowercase hex digits), \"(no commits)\" or \"(absent: ...)\", got \"" +
                            input_excerpt(out.git_commit) + "\"");
  out.git_author = p.at("git_author").as_string();
  out.tool_version = p.at("tool_version").as_string();
  out.allow_dirty = p.at("allow_dirty").as_bool();
  out.runs = static_cast<int>(p.at("runs").as_int(0, 1000));
  // A golden lockstep made comes from at least one run; an imported one
  // from none (another tool's log).
  if (out.imported_from.empty() && out.runs == 0)
    p.at("runs").fail("the runs the golden was made from, 1 or more (0 only for an imported golden)");
  if (!out.imported_from.empty() && out.runs != 0)
    p.at("runs").fail("0 for an imported golden (another tool's log, no lockstep runs), got " + std::to_string(out.runs));
  if (p.has("seeds")) {
    JsonView seeds = p.at("seeds");
    for (size_t i = 0; i < seeds.size(); ++i) {
      uint64_t s = seeds.at(i).as_uint();
      if (std::find(out.seeds.begin(), out.seeds.end(), s) != out.seeds.end())
        seeds.at(i).fail("a seed not listed before, got " + std::to_string(s) + " twice");
      out.seeds.push_back(s);
    }
    if (seeds.size() < 2) seeds.fail("two or more seeds (a multi-seed golden)");
    if (out.seeds.front() != seed)
      seeds.at(0).fail("the record's own seed " + std::to_string(seed) + " first (its run is the golden)");
  }
  return out;
}

}  // namespace

namespace {

// A golden's parts agree with each other: its platform key with its
// device; for a golden lockstep made (not imported), a recorded stack
// whose device and determinism.* fields are the record's device and
// contract. The content hash is unkeyed, so anyone can recompute it after
// an edit: these catch a hand-made golden whose parts contradict, which
// would otherwise drop to another lane or pass (docs/decisions.md).
void check_consistency(const Golden& g, JsonView& view) {
  const RunRecord& r = g.record;
  std::string family = r.platform.substr(0, r.platform.find('-'));
  if ((family == "cpu" || family == "cuda") && family != r.device)
    view.at("device").fail("\"" + family + "\", the device of its platform key " + r.platform + ", got \"" +
                           input_excerpt(r.device) + "\"");
  // A golden of a training run (steps) pins at least one series; `{}`
  // would compare nothing and pass every run.
  if (r.steps > 0 && r.series.empty())
    view.at("series").fail("at least one series (a golden of " + std::to_string(r.steps) +
                           " training steps pins its loss, at least), got none");
  // Imported (another tool's curves: no stack, no inputs, compared on its
  // series alone) is said twice, and both agree: a blessed golden given an
  // import.source would leave its inputs unchecked. (Its action is
  // "import", or "accept" once its pending golden was accepted.)
  const bool source = r.fingerprint.count("import.source") > 0, imported = !g.provenance.imported_from.empty();
  if (source && !imported)
    view.at("fingerprint").at("import.source")
        .fail("no import.source in a golden lockstep made (provenance.action \"" + input_excerpt(g.provenance.action) +
              "\", no imported_from): only `lockstep import` writes it");
  if (imported && !source)
    view.at("provenance").at("imported_from")
        .fail("a fingerprint saying where the curves came from (import.source), as `lockstep import` writes it");
  if (imported) return;  // no stack claimed
  // The platform its file is named by is the one its own fingerprint
  // makes: a golden that claims avx2 while its stack says avx512 would be
  // compared across stacks, by tolerance, with every avx2 run.
  const bool keyed = r.device == "cuda" ? r.fingerprint.count("cuda.compute_capability") > 0
                                         : r.fingerprint.count("cpu.arch") > 0 && r.fingerprint.count("cpu.capability") > 0;
  if (std::string key = platform_key(r.fingerprint); keyed && key != r.platform)
    view.at("platform").fail("\"" + key + "\", the key its fingerprint makes (device, cpu.arch, cpu.capability, "
                             "cuda.compute_capability), got \"" + input_excerpt(r.platform) + "\"");
  if (r.fingerprint.empty())
    view.at("fingerprint").fail("the stack the golden was made on (it is empty: with no stack to compare, every "
                                "run would land in the same-stack lane)");
  if (auto device = r.fingerprint.find("device"); device != r.fingerprint.end() && device->second.value != r.device)
    view.at("fingerprint").at("device").fail("{\"value\": \"" + r.device + "\"}, the record's device, got \"" +
                                             input_excerpt(device->second.value) + "\"");
  for (const auto& [key, value] : r.contract)
    if (auto f = r.fingerprint.find("determinism." + key); f != r.fingerprint.end() && f->second.value != value)
      view.at("fingerprint").at("determinism." + key)
          .fail("{\"value\": \"" + input_excerpt(value) + "\"}, the contract's " + key + ", got \"" +
                input_excerpt(f->second.value) + "\"");
}

}  // namespace

namespace {

// A golden (or, with `allow_plain_record`, a run record) from its parsed
// document. Where a plain record may stand, its long series were taken out
// as they were parsed (`taken`: a tree node per number costs three times
// the memory); a golden gets them back, for its content hash.
Golden golden_from_doc(nlohmann::json& doc, TakenArrays& taken, const std::string& path, bool allow_plain_record,
                       const std::optional<std::string>& sidecar_dir) {
  JsonView view(doc, path);
  view.expect_object();
  // A smoke config given where a record belongs: say so, not "unknown field".
  bool config_schema = !view.has("schema") || view.at("schema").raw().is_number();  // a smoke config's is 1
  if (config_schema && view.has("name") && (view.has("steps") || view.has("trainer") || view.has("model")))
    view.fail(std::string(allow_plain_record ? "a run record" : "a golden") +
              " (schema lockstep.run/1), got a smoke config; make a record with `lockstep run " + path +
              " --record RUN.json`");
  bool is_golden = view.has("provenance") || view.has("content_hash");
  if (!is_golden && !allow_plain_record)
    view.fail("a golden (with \"provenance\" and \"content_hash\"), got a plain run record");
  if (!is_golden) {
    view.allow_keys(run_record_keys());
    return Golden{run_record_from_json(view, sidecar_dir, &taken), {}, ""};
  }
  taken.restore(doc);

  std::vector<std::string_view> keys = run_record_keys();
  keys.insert(keys.end(), {"provenance", "content_hash"});
  view.allow_keys(keys);
  Golden g;
  g.record = run_record_from_json(view);
  g.provenance = provenance_from_json(view.at("provenance"), g.record.seed);
  // Per-step mean/std exist exactly when the golden is multi-seed.
  for (const auto& [name, series] : g.record.series)
    if (series.mean.empty() != g.provenance.seeds.empty())
      view.at("series").at(name).fail(g.provenance.seeds.empty()
                                          ? "no mean/std in a single-seed golden (provenance lists no seeds)"
                                          : "a per-step mean and std (provenance lists " +
                                                std::to_string(g.provenance.seeds.size()) + " seeds)");

  g.content_hash = view.at("content_hash").as_string();
  nlohmann::json body = doc;
  body.erase("content_hash");
  std::string actual = golden_content_hash(body);
  if (actual != g.content_hash)
    view.at("content_hash")
        .fail(std::string("the hash of the golden's content; it does not match: the golden was edited after ") +
              (g.provenance.imported_from.empty()
                   ? "`lockstep bless` (regenerate it with bless instead of editing it)"
                   : "`lockstep import` (import the curves again instead of editing it)"));
  if (g.record.series.empty() && g.record.probes.empty() && g.record.hashes.empty())
    view.fail("a golden with at least one series, probe or hash (this one is empty)");
  check_consistency(g, view);
  return g;
}

}  // namespace

Golden golden_from_text(const std::string& text, const std::string& path, bool allow_plain_record,
                        const std::optional<std::string>& sidecar_dir) {
  TakenArrays taken;
  nlohmann::json doc = allow_plain_record ? parse_json_text(text, path, take_record_arrays, taken)
                                          : parse_json_text(text, path);
  return golden_from_doc(doc, taken, path, allow_plain_record, sidecar_dir);
}

Golden read_golden(const std::string& path) { return golden_from_text(read_file(path), path, false); }

Golden read_golden_or_record(const std::string& path) {
  TakenArrays taken;
  nlohmann::json doc = parse_json_file(path, take_record_arrays, taken);  // read where it lies: no copy
  return golden_from_doc(doc, taken, path, true, sidecar_dir_of(path));
}

std::string write_golden(const std::string& path, Golden golden) {
  nlohmann::json body = golden_body_json(golden);
  std::string hash = golden_content_hash(body);
  body["content_hash"] = hash;
  write_file_atomically(path, pretty_dump(body));
  return hash;
}

}  // namespace lockstep

// `lockstep compare RUN GOLDEN`: the comparator on two files, without
// LibTorch. GOLDEN may be a goldens folder: the run's smoke and platform
// pick the golden in it, as `check` does (how a run made elsewhere, e.g.
// by the nodes of a multi-machine job, is gated).
#include <unistd.h>

#include <filesystem>
#include <future>
#include <iostream>

#include "cli/commands.h"
#include "smoke/smoke_config.h"
#include "compare/compare.h"
#include "compare/html_report.h"
#include "compare/junit_report.h"
#include "compare/markdown_report.h"
#include "compare/text_report.h"
#include "core/atomic_file.h"
#include "core/json_io.h"
#include "core/error.h"
#include "smoke/golden_store.h"
#include "record/golden.h"
#include "record/platform_key.h"

namespace lockstep {

namespace {

// The equivalence lane a record was made by (its config's "variant"), "".
std::string lane_of(const RunRecord& r) {
  auto it = r.config.find("variant");
  if (it == r.config.end()) return "";
  try {
    auto j = nlohmann::json::parse(it->second);
    return j.is_string() ? j.get<std::string>() : "";
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

// A lane's record against its base run, as check holds it
// (compare_variant): the lane's rule and same_batches from `config`'s
// equivalence section when it has the lane, else bit for bit on the same
// batches, said in a note. `base_is_golden`: the reference is a golden of
// the base run, made in another job, and said so (check holds a lane to
// the base run of its own job).
Verdict compare_lane(const RunRecord& run, const RunRecord& base, bool base_is_golden,
                     const std::vector<EquivalenceVariant>& lanes, const std::string& config,
                     const CompareLabels& files) {
  const std::string name = lane_of(run);
  Tolerance rule = Tolerance::exact();
  bool same_batches = true;
  std::string how = "no --config naming lane " + name + ": held bit for bit, on the same batches";
  for (const auto& l : lanes)
    if (l.name == name) {
      rule = l.rule;
      same_batches = l.same_batches;
      how = "held by equivalence." + name + " of " + config;
    }
  CompareLabels labels{files.run, files.golden, "base run", "lane " + name};
  if (base_is_golden) {  // another job's base run
    labels.reference_word = "golden";
    labels.reference_from = "(the base run of the job that blessed it)";
  }
  Verdict v = compare_variant(run, base, rule, same_batches, labels);
  v.smoke = base.smoke;
  v.equivalence_lane = name;
  v.notes.insert(v.notes.begin(),
                 "the run is equivalence lane " + name + "'s (its config's \"variant\"), the reference " +
                     (base_is_golden ? "a golden, the base run of another job (check holds a lane to the base run of "
                                       "its own job, run-1.json beside it; a stack change shows here too)"
                                     : std::string("a base run")) +
                     ": compared as check compares a lane, its inputs left out; " + how);
  return v;
}

// Each report file asked for (--json, --junit, --markdown, --html) must be
// a new file or an earlier report of its kind: never an input, a golden, a
// pending golden's name, nor inside the goldens folder compared against.
// Throws BadUsage naming the flag.
void refuse_bad_report_paths(const CompareOptions& o) {
  struct Output {
    const char* what;
    const char* flag;
    const std::string* path;
    const char* signature;
  };
  const Output outputs[] = {{"the --json report", "--json", &o.json_out, "\"lane_reason\": "},
                            {"the --junit report", "--junit", &o.junit_out, "<testsuites name=\"lockstep\""},
                            {"the --markdown report", "--markdown", &o.markdown_out, "### lockstep: "},
                            {"the --html report", "--html", &o.html_out, "<title>lockstep: "}};
  std::error_code dir_ec;
  const bool goldens_folder = std::filesystem::is_directory(o.golden, dir_ec);
  for (const auto& [what, flag, out, signature] : outputs) {
    if (out->empty()) continue;
    if (!pending_platform_of(std::filesystem::path(*out).filename().string()).empty())
      throw BadUsage(*out + ": " + what + " must not be named *.golden.new: review and accept would take it for a "
                     "pending golden");
    refuse_overwriting_inputs(*out, {o.run, o.golden, o.config});
    if (goldens_folder) refuse_writing_into_folder_of_goldens(*out, o.golden, what);
    else refuse_overwriting_a_golden(*out, what);
    require_report_file(flag, *out, signature, {o.run, o.golden, o.config});
  }
}

}  // namespace

int compare_command(const CompareOptions& o) {
  // Each report, its flag and what an earlier report of its kind holds: an
  // existing file is replaced only when it is one (cli/out_folder.cpp).
  refuse_bad_report_paths(o);
  TolerancePolicy policy;
  std::vector<EquivalenceVariant> lanes;
  if (!o.config.empty()) {
    SmokeConfig cfg = load_smoke_config(o.config);
    policy = cfg.tolerance;
    lanes = cfg.equivalence;
  }
  std::error_code ec;
  RunRecord run;
  Golden golden;
  std::string golden_path = o.golden;
  std::string stand_in;  // a same-family or unlabeled golden compared in place of the run's own
  if (std::filesystem::is_directory(o.golden, ec)) {
    // A goldens folder: the run's smoke, platform and stack label pick the golden, as in
    // `check` (smoke/golden_store.h).
    run = read_golden_or_record(o.run).record;
    // The two name a path under the folder: plain names only.
    for (auto [field, value] : {std::pair<const char*, const std::string*>{"smoke", &run.smoke}, {"platform", &run.platform}})
      if (!is_golden_name(*value))
        throw BadInput(o.run, field, "a name of letters, digits, '.', '_' and '-' (it picks the golden in " + o.golden +
                                         "), got \"" + input_excerpt(*value) + "\"");
    // The smoke's own folder (goldens/<smoke>/) stands for its goldens
    // folder, as a user who points at the goldens may mean.
    std::string root = o.golden;
    std::filesystem::path named = std::filesystem::path(o.golden).lexically_normal();
    if (named.filename().empty()) named = named.parent_path();
    if (named.filename() == run.smoke && !std::filesystem::is_directory(named / run.smoke, ec))
      root = named.parent_path().empty() ? "." : named.parent_path().string();
    auto found = find_golden(root, run.smoke, run.platform, run.stack);
    if (!found)
      throw BadInput(o.golden, "",
                     "a golden for smoke '" + run.smoke + "' on platform " + golden_key(run.platform, run.stack) +
                         " (or its family) in " +
                         (std::filesystem::path(root) / run.smoke).lexically_normal().string() +
                         "/, found none; create one with `lockstep bless`");
    golden_path = found->path;
    stand_in = stand_in_note(*found, run.platform, run.stack);
    golden = read_filed_golden(*found, run.smoke);
  } else {
    // The two files are read in parallel: for long records, reading is most
    // of the time. Errors come out as in a sequential read: the run's first.
    auto golden_read = std::async(std::launch::async, [&] { return read_golden_or_record(o.golden); });
    run = read_golden_or_record(o.run).record;  // a golden may stand on either side
    golden = golden_read.get();
    // Two files named by hand: a golden of another stack label is said.
    if (run.stack != golden.record.stack)
      stand_in = "the golden was made for stack " + (golden.record.stack.empty() ? "(unlabeled)" : golden.record.stack) +
                 ", the run under " + (run.stack.empty() ? "no stack label" : "stack " + run.stack) +
                 " (LOCKSTEP_STACK): compared as given";
  }
  // Another smoke's tolerances would judge these records by rules never
  // meant for them (and could pass what their own fail). A plain import
  // without --name is "imported": any smoke's config may judge it.
  if (!o.config.empty() && golden.record.smoke != "imported") {
    const std::string config_name = load_smoke_config(o.config).name;
    if (config_name != golden.record.smoke)
      throw BadUsage("--config " + o.config + ": the config of smoke '" + config_name + "', but the records are of "
                     "smoke '" + golden.record.smoke + "'; give that smoke's config (its tolerances and lanes)");
  }
  Verdict v = lane_of(run).empty() || !lane_of(golden.record).empty()
                  ? compare_records(run, golden.record, policy, {o.run, golden_path})
                  : compare_lane(run, golden.record, !golden.content_hash.empty(), lanes, o.config, {o.run, golden_path});
  if (!stand_in.empty()) v.notes.insert(v.notes.begin(), stand_in);
  std::cout << render_text(v, isatty(STDOUT_FILENO));
  if (!o.json_out.empty()) write_file_atomically(o.json_out, pretty_dump(to_json(v)));
  if (!o.junit_out.empty()) write_file_atomically(o.junit_out, render_junit({v}));
  if (!o.markdown_out.empty()) write_file_atomically(o.markdown_out, render_markdown(v));
  if (!o.html_out.empty()) write_file_atomically(o.html_out, render_html(v, run, golden.record));
  return to_int(v.exit_code());
}

}  // namespace lockstep

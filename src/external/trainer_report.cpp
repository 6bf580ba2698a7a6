#include "external/trainer_report.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "core/json_io.h"
#include "machine/machine_facts.h"

namespace lockstep {

TrainerReport read_trainer_report(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw BadInput(path, "", "the report the trainer writes when it calls lockstep.apply_contract() "
                             "(python/lockstep); the file is missing, so the trainer never applied lockstep's "
                             "determinism contract");
  if (!std::filesystem::is_regular_file(path, ec))
    throw BadInput(path, "", "a regular file (the trainer's report), not a folder, FIFO or device");
  nlohmann::json doc = parse_json_file(path);
  JsonView v(doc, path);
  v.expect_object();
  v.allow_keys({"schema", "helper", "contract", "fingerprint", "perturbed"});
  if (v.at("schema").as_string() != "lockstep.trainer/1")
    v.at("schema").fail("\"lockstep.trainer/1\" (the helper shipped with this lockstep)");
  TrainerReport r;
  if (v.has("helper")) {
    JsonView h = v.at("helper");
    h.allow_keys({"version", "path"});
    r.helper_version = h.at("version").as_string();
    r.helper_path = h.at("path").as_string();
    if (r.helper_version.empty() || r.helper_version.size() > 64) h.at("version").fail("a version of 1 to 64 characters");
    if (r.helper_path.size() > 4096) h.at("path").fail("a folder of at most 4096 characters");
  }
  if (v.has("perturbed")) {
    r.perturbed = v.at("perturbed").as_string();
    if (r.perturbed.empty() || r.perturbed.size() > 512) v.at("perturbed").fail("a sentence of 1 to 512 characters");
  }
  JsonView c = v.at("contract");
  c.expect_object();
  for (const auto& k : c.keys()) r.contract[k] = c.at(k).as_string();
  JsonView f = v.at("fingerprint");
  f.expect_object();
  const std::vector<std::string> keys = f.keys();
  if (keys.size() > kMaxFingerprintFields)
    f.fail("at most " + std::to_string(kMaxFingerprintFields) + " fields, got " + std::to_string(keys.size()));
  for (const auto& k : keys) {
    JsonView field = f.at(k);
    field.allow_keys({"value", "relevant"});
    if (k.empty() || k.size() > 256) field.fail("a field name of 1 to 256 characters");
    r.fingerprint[k] = FingerprintField{field.at("value").as_string(), field.at("relevant").as_bool()};
  }
  return r;
}

void add_trainer_facts(const TrainerReport& report, const std::string& report_path, RunRecord& rec) {
  auto cap = report.fingerprint.find("python.torch.cpu_capability");
  // It names the platform (and the golden's file): what
  // torch.backends.cpu.get_cpu_capability() returns ("AVX2", "NO AVX",
  // "SVE256", ...), never a path or a paragraph.
  if (cap != report.fingerprint.end() && cap->second.value.rfind("(absent", 0) != 0) {
    const std::string& v = cap->second.value;
    bool ok = !v.empty() && v.size() <= 32 && std::all_of(v.begin(), v.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '_';
    });
    if (!ok)
      throw BadInput(report_path, "fingerprint.python.torch.cpu_capability.value",
                     "what torch.backends.cpu.get_cpu_capability() returns (1 to 32 letters, digits, spaces, "
                     "e.g. \"AVX2\")");
  }
  auto isa = rec.fingerprint.find("cpu.isa");
  rec.fingerprint["cpu.capability"] = {cap != report.fingerprint.end() && cap->second.value.rfind("(absent", 0) != 0
                                           ? cap->second.value
                                           : cpu_capability_from_isa(isa == rec.fingerprint.end() ? "" : isa->second.value),
                                       true};
  rec.contract = report.contract;
  for (const auto& [k, v] : report.contract) rec.fingerprint["determinism." + k] = {v, true};
  // The trainer's own facts, in its namespaces, never over lockstep's.
  for (const auto& [k, f] : report.fingerprint) {
    bool own = k.rfind("python.", 0) == 0 || k.rfind("loader.", 0) == 0 || k.rfind("trainer.", 0) == 0;
    if (!own || rec.fingerprint.count(k))
      throw BadInput(report_path, "fingerprint." + k,
                     "a field under python., loader. or trainer. that lockstep does not record itself");
    rec.fingerprint[k] = f;
  }
}

std::string helper_mismatch(const TrainerReport& r) {
  if (r.helper_version == LOCKSTEP_VERSION) return "";
  return "the trainer imported lockstep's Python helper " +
         (r.helper_version.empty() ? std::string("of a version before 0.1.0 (its report names none)")
                                   : r.helper_version) +
         (r.helper_path.empty() ? "" : " from " + r.helper_path) + ", but this lockstep is " + LOCKSTEP_VERSION +
         ": the helper and the binary must come from one install (lockstep puts its own helper first on "
         "PYTHONPATH: does the trainer put another copy of `lockstep` first on sys.path, or does "
         "LOCKSTEP_PYTHONPATH name an old one?)";
}

TrainerReport read_checked_report(const SmokeConfig& c, const std::string& dir) {
  const std::string path = dir + "/" + kTrainerReportFile;
  TrainerReport r = read_trainer_report(path);
  if (std::string why = helper_mismatch(r); !why.empty()) throw EnvironmentError(path + ": " + why);
  if (std::string why = contract_mismatch(expected_contract(c), r.contract); !why.empty())
    throw EnvironmentError(path + ": the trainer ran under another determinism contract than " + c.file +
                           " asks for (" + c.mode + "): " + why);
  return r;
}

std::map<std::string, std::string> expected_contract(const SmokeConfig& c) {
  std::map<std::string, std::string> e = {{"mode", c.mode},
                                          {"intra_op_threads", std::to_string(c.intra_op_threads)},
                                          {"inter_op_threads", std::to_string(c.inter_op_threads)}};
  if (c.mode == "strict")
    e.insert({{"deterministic_algorithms", "true"},
              {"deterministic_algorithms_warn_only", "false"},
              {"cudnn_deterministic", "true"},
              {"cudnn_benchmark", "false"},
              {"allow_tf32_cublas", "false"},
              {"allow_tf32_cudnn", "false"}});
  return e;
}

std::string contract_mismatch(const std::map<std::string, std::string>& expected,
                              const std::map<std::string, std::string>& reported) {
  std::string out;
  for (const auto& [k, want] : expected) {
    auto it = reported.find(k);
    std::string have = it == reported.end() ? "(not reported)" : it->second;
    if (have != want) out += (out.empty() ? "" : "; ") + k + " must be " + want + ", the trainer reported " + have;
  }
  return out;
}

}  // namespace lockstep

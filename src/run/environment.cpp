#include "run/environment.h"

#include <charconv>
#include <map>

#include "core/error.h"
#include "determinism/contract.h"
#include "env/cuda_preflight.h"
#include "env/fingerprint_capture.h"
#include "record/golden.h"
#include "record/platform_key.h"

namespace lockstep {

EnvReport describe_environment(const EnvQuery& o) {
  std::map<std::string, std::string> contract;
  Golden other;
  if (!o.diff_record.empty()) {
    other = read_golden_or_record(o.diff_record);
    // Apply the record's contract so the two fingerprints are comparable.
    auto get = [&](const char* k, const std::string& d) {
      auto it = other.record.contract.find(k);
      return it == other.record.contract.end() ? d : it->second;
    };
    // The record's own fields, checked before they are applied (a thread
    // count of 100000 would take minutes to refuse).
    std::string mode = get("mode", "strict");
    if (mode != "strict" && mode != "default")
      throw BadInput(o.diff_record, "contract.mode", "\"strict\" or \"default\", got \"" + input_excerpt(mode) + "\"");
    auto threads = [&](const char* key) {
      std::string text = get(key, "1");
      int n = 0;
      auto res = std::from_chars(text.data(), text.data() + text.size(), n);
      if (res.ec != std::errc() || res.ptr != text.data() + text.size() || n < 1 || n > 1024)
        throw BadInput(o.diff_record, std::string("contract.") + key, "an integer in [1, 1024], got \"" + input_excerpt(text) + "\"");
      return n;
    };
    int intra = threads("intra_op_threads"), inter = threads("inter_op_threads");
    if (other.record.device != "cpu" && other.record.device != "cuda")
      throw BadInput(o.diff_record, "device", "\"cpu\" or \"cuda\", got \"" + input_excerpt(other.record.device) + "\"");
    if (o.device_given && o.device != other.record.device)
      throw BadUsage("env --device " + o.device + " --diff " + o.diff_record + ": the record is a " +
                     other.record.device + " run, and the diff uses the record's device; drop --device");
    contract = apply_determinism_contract({mode, intra, inter});
  } else {
    contract = read_determinism_state();
  }
  std::string device = o.diff_record.empty() ? o.device : other.record.device;
  EnvReport r;
  r.device = device;
  r.fingerprint = capture_fingerprint({device, contract, o.repo_path});
  r.platform = platform_key(r.fingerprint);
  // `--device cuda` where CUDA is unusable still prints what was found, and
  // says why, with the preflight's exit code.
  r.cuda_unusable = device == "cuda" ? cuda_unusable_reason() : "";
  if (o.diff_record.empty()) return r;
  // The smoke's inputs and their descriptions belong to a run, not to the machine.
  for (auto it = other.record.fingerprint.begin(); it != other.record.fingerprint.end();)
    if (it->second.input || it->first.rfind("data.", 0) == 0 || it->first.rfind("model.", 0) == 0 ||
        it->first.rfind("config.", 0) == 0)
      it = other.record.fingerprint.erase(it);
    else
      ++it;
  r.record_platform = other.record.platform;
  r.differences = diff_fingerprints(other.record.fingerprint, r.fingerprint);
  return r;
}


}  // namespace lockstep

#include "external/trainer_batch_sweep.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "external/trainer_passes.h"
#include "external/trainer_report.h"

namespace lockstep {
namespace fs = std::filesystem;

BatchSweep sweep_trainer_batch_invariance(const SmokeConfig& c, const std::string& work_dir) {
  if (!c.has_trainer()) throw BadUsage(c.file + ": no trainer section");
  if (c.distributed.configured)
    throw BadUsage("--batch-sweep: " + c.file + " runs " + std::to_string(c.distributed.world_size) +
                   " ranks; the sweep forwards one process's first batch (a single-process trainer smoke)");
  TrainerLayout l(c, base_seed(c).first, work_dir);
  check_python_script(l);
  const std::string dir = l.work + "/sweep", file = dir + "/" + kBatchSweepFile;
  Pass pass{l.argv(dir, 0, l.worker_counts.front(), {}), l.env(dir, "train", 0, ""), dir,
            "training pass (batch sweep at step 0's forward)", ""};
  pass.env["LOCKSTEP_BATCH_SWEEP"] = file;
  try {
    run_passes(c, {pass}, false);
  } catch (const Error&) {
    // The helper says why it could not sweep ({"error": ...}, exit 2): the
    // model's fault, not the trainer's crash.
    std::error_code ec;
    if (fs::is_regular_file(file, ec) && fs::file_size(file, ec) < 65536) {
      nlohmann::json said = nlohmann::json::parse(read_file(file), nullptr, /*allow_exceptions=*/false);
      if (said.is_object() && said.contains("error") && said["error"].is_string()) {
        // The trainer's process wrote it: printable characters only, bounded.
        std::string why;
        for (unsigned char ch : said["error"].get<std::string>())
          if (why.size() < 600) why += ch < 0x20 || ch == 0x7f ? ' ' : static_cast<char>(ch);
        throw BadUsage("--batch-sweep: " + c.file + ": the helper could not sweep the trainer's model: " + why);
      }
    }
    throw;
  }

  read_checked_report(c, dir);  // this helper, this contract
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw BadInput(c.file, "trainer.command",
                   "a trainer whose model the helper can sweep: it sweeps at the ModuleTracer's step(0), before "
                   "the first forward (tracer = ctx.trace_modules(model); tracer.step(0)), and this trainer ran to "
                   "its end without one (" + file + " was never written)");
  BatchSweep s = read_batch_sweep(file);
  s.smoke = c.name;
  s.device = c.device;
  return s;
}

}  // namespace lockstep

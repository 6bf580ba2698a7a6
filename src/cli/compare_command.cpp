// `lockstep compare RUN GOLDEN`: the comparator on two files, without
// LibTorch.
#include <unistd.h>

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
#include "record/golden.h"

namespace lockstep {

int compare_command(const CompareOptions& o) {
  for (const auto& out : {o.json_out, o.junit_out, o.markdown_out, o.html_out})
    refuse_overwriting_inputs(out, {o.run, o.golden, o.config});
  TolerancePolicy policy;
  if (!o.config.empty()) policy = load_smoke_config(o.config).tolerance;
  // The two files are read in parallel: for long records, reading is most
  // of the time. Errors come out as in a sequential read: the run's first.
  auto golden_read = std::async(std::launch::async, [&] { return read_golden_or_record(o.golden); });
  RunRecord run = read_golden_or_record(o.run).record;  // a golden may stand on either side
  Golden golden = golden_read.get();
  Verdict v = compare_records(run, golden.record, policy, {o.run, o.golden});
  std::cout << render_text(v, isatty(STDOUT_FILENO));
  if (!o.json_out.empty()) write_file_atomically(o.json_out, pretty_dump(to_json(v)));
  if (!o.junit_out.empty()) write_file_atomically(o.junit_out, render_junit({v}));
  if (!o.markdown_out.empty()) write_file_atomically(o.markdown_out, render_markdown(v));
  if (!o.html_out.empty()) write_file_atomically(o.html_out, render_html(v, run, golden.record));
  return to_int(v.exit_code());
}

}  // namespace lockstep

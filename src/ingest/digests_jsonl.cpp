#include "ingest/digests_jsonl.h"

#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "ingest/line_reader.h"

namespace lockstep {

StepDigests read_digests_jsonl(const std::string& path, int64_t steps, int64_t first_step) {
  LineReader lines(path);
  StepDigests d;
  std::string_view line;
  while (lines.next(line)) {
    if (is_blank_line(line)) continue;
    std::string where = path + ": line " + std::to_string(lines.line_number());
    nlohmann::json doc = parse_json_text(std::string(line), where);
    JsonView n(doc, where);
    n.expect_object();
    n.allow_keys({"step", "params", "grads"});
    if (steps <= first_step) n.fail("no line: the run trains no step here");
    int64_t step = n.at("step").as_int(first_step, steps - 1);
    if (!d.steps.empty() && step <= d.steps.back())
      n.at("step").fail("steps in increasing order (after " + std::to_string(d.steps.back()) + "), got " +
                        std::to_string(step));
    for (const char* key : {"params", "grads"}) {
      std::string hex = n.at(key).as_string();
      if (!is_hex_digest(hex, 32))
        n.at(key).fail("an XXH3-128 digest (32 lowercase hex digits), got \"" + input_excerpt(hex) + "\"");
      (key[0] == 'p' ? d.params : d.grads).push_back(std::move(hex));
    }
    d.steps.push_back(step);
  }
  if (d.steps.empty()) throw BadInput(path, "", "at least one line of digests (the file holds only blank lines)");
  return d;
}

}  // namespace lockstep

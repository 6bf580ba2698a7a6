#include "record/batch_sweep.h"

#include <limits>
#include <set>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {

int64_t ModuleSweep::first_size_differing() const {
  for (const auto& c : cells)
    if (c.samples_differ > 0) return c.size;
  return 0;
}

int64_t ModuleSweep::first_size_originating() const {
  for (const auto& c : cells)
    if (c.samples_new > 0) return c.size;
  return 0;
}

bool BatchSweep::invariant() const {
  for (const auto& m : modules)
    if (m.first_size_differing() != 0) return false;
  return true;
}

nlohmann::json batch_sweep_json(const BatchSweep& s) {
  nlohmann::json modules = nlohmann::json::array();
  for (const auto& m : s.modules) {
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& c : m.cells) {
      nlohmann::json cell = {{"size", c.size},       {"samples_differ", c.samples_differ},
                             {"samples_new", c.samples_new}, {"max_ulp", c.max_ulp},
                             {"max_abs", c.max_abs}, {"seconds", c.seconds}};
      if (c.plain_seconds > 0) cell["plain_seconds"] = c.plain_seconds;  // only when timed (the bench)
      cells.push_back(std::move(cell));
    }
    modules.push_back({{"module", m.module},
                       {"type", m.type},
                       {"per_sample", m.per_sample},
                       {"invariant", m.first_size_differing() == 0},
                       {"first_size_differing", m.first_size_differing()},
                       {"first_size_originating", m.first_size_originating()},
                       {"cells", cells}});
  }
  return {{"smoke", s.smoke},         {"device", s.device},         {"batch", s.batch}, {"sizes", s.sizes},
          {"invariant", s.invariant()}, {"forward_s", s.forward_s}, {"modules", modules}};
}

namespace {

constexpr double kMaxSeconds = 1e7;
constexpr const char* kModelOutput = "(model output)";

// A name printed on a terminal must not carry escapes or line breaks.
bool has_control_character(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}
constexpr int64_t kMaxBatch = int64_t{1} << 40;
constexpr size_t kMaxModules = 100000;

SweepCell read_cell(const JsonView& v, int64_t size, int64_t batch) {
  v.expect_object();
  v.allow_keys({"size", "samples_differ", "samples_new", "max_ulp", "max_abs", "seconds", "plain_seconds"});
  SweepCell c;
  c.size = v.at("size").as_int(1, batch);
  if (c.size != size) v.at("size").fail("the sweep's size " + std::to_string(size) + " (one cell per size after " +
                                        std::to_string(batch) + ", in order)");
  c.samples_differ = v.at("samples_differ").as_int(0, batch);
  c.samples_new = v.at("samples_new").as_int(0, c.samples_differ);
  c.max_ulp = v.at("max_ulp").as_uint();
  c.max_abs = v.at("max_abs").as_finite(0, std::numeric_limits<double>::max());
  c.seconds = v.at("seconds").as_finite(0, kMaxSeconds);
  if (v.has("plain_seconds")) c.plain_seconds = v.at("plain_seconds").as_finite(0, kMaxSeconds);
  if (c.samples_differ == 0 && (c.max_ulp != 0 || c.max_abs != 0))
    v.at("max_ulp").fail("0 and max_abs 0 where no sample differs");
  return c;
}

ModuleSweep read_module(const JsonView& v, const std::vector<int64_t>& sizes) {
  v.expect_object();
  v.allow_keys({"module", "type", "per_sample", "invariant", "first_size_differing", "first_size_originating",
                "cells"});
  ModuleSweep m;
  m.module = v.at("module").as_string();
  if (m.module.empty() || m.module.size() > 1024 || has_control_character(m.module))
    v.at("module").fail("a module name of 1 to 1024 printable characters");
  m.type = v.has("type") ? v.at("type").as_string() : "";
  if (m.type.size() > 256 || has_control_character(m.type))
    v.at("type").fail("a class name of at most 256 printable characters");
  m.per_sample = v.at("per_sample").as_bool();
  JsonView cells = v.at("cells");
  cells.expect_array();
  if (cells.size() != sizes.size() - 1)
    cells.fail(std::to_string(sizes.size() - 1) + " cells (one per size after " + std::to_string(sizes.front()) +
               "), got " + std::to_string(cells.size()));
  for (size_t k = 0; k < cells.size(); ++k) m.cells.push_back(read_cell(cells.at(k), sizes[k + 1], sizes.front()));
  // Derived fields, where written, must say what the cells say.
  if (v.has("invariant") && v.at("invariant").as_bool() != (m.first_size_differing() == 0))
    v.at("invariant").fail(std::string(m.first_size_differing() == 0 ? "true" : "false") + " (what its cells say)");
  if (v.has("first_size_differing") && v.at("first_size_differing").as_int() != m.first_size_differing())
    v.at("first_size_differing").fail(std::to_string(m.first_size_differing()) + " (what its cells say)");
  if (v.has("first_size_originating") && v.at("first_size_originating").as_int() != m.first_size_originating())
    v.at("first_size_originating").fail(std::to_string(m.first_size_originating()) + " (what its cells say)");
  return m;
}

}  // namespace

BatchSweep read_batch_sweep(const std::string& path) {
  nlohmann::json doc = parse_json_file(path);
  JsonView v(doc, path);
  v.expect_object();
  v.allow_keys({"smoke", "device", "batch", "sizes", "invariant", "forward_s", "modules"});
  BatchSweep s;
  if (v.has("smoke")) s.smoke = v.at("smoke").as_string();
  if (v.has("device")) s.device = v.at("device").as_enum({"cpu", "cuda"});
  s.batch = v.at("batch").as_int(2, kMaxBatch);
  JsonView sizes = v.at("sizes");
  sizes.expect_array();
  std::vector<int64_t> want;
  for (int64_t n = s.batch; n >= 1; n /= 2) want.push_back(n);
  if (sizes.size() != want.size()) sizes.fail("the sizes " + std::to_string(s.batch) + " halved down to 1 (" +
                                              std::to_string(want.size()) + " of them)");
  for (size_t k = 0; k < want.size(); ++k)
    if (sizes.at(k).as_int() != want[k]) sizes.at(k).fail(std::to_string(want[k]) + " (the batch halved, rounded down)");
  s.sizes = want;
  s.forward_s = v.at("forward_s").as_finite(0, kMaxSeconds);
  JsonView modules = v.at("modules");
  modules.expect_array();
  if (modules.size() == 0 || modules.size() > kMaxModules)
    modules.fail("1 to " + std::to_string(kMaxModules) + " modules (at least the model's output)");
  std::set<std::string> names;
  for (size_t i = 0; i < modules.size(); ++i) {
    s.modules.push_back(read_module(modules.at(i), s.sizes));
    const std::string& name = s.modules.back().module;
    if (!names.insert(name).second)
      modules.at(i).at("module").fail("a module name not used by an earlier row (a second call is \"" + name +
                                      "#2\"), got \"" + name + "\" again");
    if (name == kModelOutput && i + 1 != modules.size())
      modules.at(i).at("module").fail("\"(model output)\" only as the last row, after every module's");
  }
  if (v.has("invariant") && v.at("invariant").as_bool() != s.invariant())
    v.at("invariant").fail(std::string(s.invariant() ? "true" : "false") + " (what the modules' cells say)");
  return s;
}

}  // namespace lockstep

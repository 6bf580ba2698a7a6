// The key table of smoke configs against the parser: every key the table
// lists is accepted and changed here, and config.values_xxh3 moves exactly
// for the keys the table says move it; a key the parser accepts but the
// table does not list cannot exist (the parser's allow_keys come from the
// table); every key outside the value hash is listed in
// docs/smoke-config.md.
#include "smoke/config_keys.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "smoke/smoke_config.h"
#include "test_paths.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Base configs, one per kind of smoke a key applies to.
json base(const std::string& family) {
  json csv = {{"name", "keys"},
              {"seed", 1},
              {"steps", 4},
              {"data", {{"source", "csv"}, {"path", "d.csv"}, {"sample_shape", {4}}, {"batch_size", 4}}},
              {"model", {{"name", "mlp"}, {"classes", 3}}},
              {"optimizer", {{"name", "sgd"}, {"lr", 0.1}}}};
  if (family == "csv") return csv;
  if (family == "images") {
    json c = csv;
    c["data"] = {{"source", "images"},
                 {"path", "imgs"},
                 {"sample_shape", {3, 8, 8}},
                 {"batch_size", 4},
                 {"image", {{"interpolation", "area"}}},
                 {"augment", {{"normalize", {{"mean", {0, 0, 0}}, {"std", {1, 1, 1}}}}}}};
    c["model"] = {{"name", "cnn"}, {"classes", 3}};
    c["optimizer"] = {{"name", "adam"}, {"lr", 0.01}};
    return c;
  }
  if (family == "tokens" || family == "tabular") {
    json c = csv;
    c["data"] = {{"source", "synthetic"}, {"sample_shape", {8}}, {"batch_size", 4}};
    if (family == "tokens") {
      c["data"]["synthetic"] = {{"kind", "tokens"}, {"rows", 64}, {"vocab", 16}};
      c["model"] = {{"name", "transformer"}, {"d_model", 8}, {"heads", 2}, {"ff", 16}, {"classes", 16}};
    } else {
      c["data"]["synthetic"] = {{"kind", "tabular"}, {"rows", 64}};
    }
    return c;
  }
  if (family == "torchscript") {
    json c = csv;
    c["model"] = {{"name", "torchscript"}, {"path", "m.pt"}, {"classes", 3}};
    return c;
  }
  if (family == "sgd-momentum") {
    json c = csv;
    c["optimizer"]["momentum"] = 0.9;
    return c;
  }
  if (family == "warmup" || family == "step-decay") {
    json c = csv;
    c["optimizer"]["schedule"] = family == "warmup" ? json{{"name", "warmup"}, {"warmup_steps", 2}}
                                                    : json{{"name", "step"}, {"step_size", 2}, {"gamma", 0.5}};
    return c;
  }
  if (family == "ranks" || family == "rank-fault") {
    json c = csv;
    c["distributed"] = {{"world_size", 2}};
    if (family == "rank-fault") c["distributed"]["self_test"] = {{"fault", "nan_loss"}, {"rank", 0}, {"step", 1}};
    return c;
  }
  if (family == "traced") {
    json c = csv;
    c["trace"] = {{"steps", 2}, {"self_test", {{"module", "fc1"}, {"step", 0}}}};
    return c;
  }
  json t = {{"name", "keys"},
            {"seed", 1},
            {"steps", 4},
            {"trainer",
             {{"command", {"python3", "train.py"}},
              {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}},
              {"probes", "{out}/p.jsonl"}}}};
  if (family == "trainer") return t;
  if (family == "trainer-workers") {
    t["trainer"]["command"] = {"python3", "train.py", "--workers", "{workers}"};
    t["trainer"]["workers"] = {2};
    return t;
  }
  if (family == "mllog") {
    t["trainer"]["metrics"] = {{"format", "mllog"}, {"path", "{out}/log.txt"}, {"series", {{"loss", "train_loss"}}}};
    return t;
  }
  if (family == "resumable") {
    t["trainer"]["resume"] = {{"stop", {"--stop", "{resume_at}", "--checkpoint", "{checkpoint}"}},
                              {"continue", {"--resume", "{checkpoint}"}}};
    return t;
  }
  ADD_FAILURE() << "no base config " << family;
  return csv;
}

// A change of one key: the base it applies to and the edits (a null value
// erases the key).
struct Change {
  std::string family;
  std::vector<std::pair<std::string, json>> edits;
};

// One change per leaf key of the table (a key without children there).
const std::map<std::string, Change>& changes() {
  static const std::map<std::string, Change> m = {
      {"schema", {"csv", {{"schema", 1}}}},
      {"name", {"csv", {{"name", "other"}}}},
      {"device", {"csv", {{"device", "cuda"}}}},
      {"min_driver", {"csv", {{"min_driver", "535.104"}}}},
      {"seed", {"csv", {{"seed", 2}}}},
      {"steps", {"csv", {{"steps", 5}}}},
      {"determinism.mode", {"csv", {{"determinism.mode", "default"}}}},
      {"determinism.intra_op_threads", {"csv", {{"determinism.intra_op_threads", 2}}}},
      {"determinism.inter_op_threads", {"csv", {{"determinism.inter_op_threads", 2}}}},
      {"repeat", {"csv", {{"repeat", 3}}}},
      {"repeat_varies", {"csv", {{"repeat_varies", {"env-order"}}}}},
      {"platforms", {"csv", {{"platforms", {"cpu-x86_64-avx2"}}}}},
      {"resume_at", {"csv", {{"resume_at", 2}}}},
      {"equivalence", {"csv", {{"equivalence", json::parse(R"({"workers0": {"set": {"data": {"workers": 0}}}})")}}}},
      {"tolerance", {"csv", {{"tolerance", {{"series", {{"loss", {{"rtol", 1e-3}}}}}}}}}},
      {"calibration.date", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.date", "2026-12-04T10:00:00Z"}}}},
      {"calibration.axes", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.axes", {{"workers", {"0", "2"}}}}}}},
      {"calibration.repeats", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.repeats", 2}}}},
      {"calibration.runs", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.runs", 8}}}},
      {"calibration.runners", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.runners", {"host a"}}}}},
      {"calibration.multiplier", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.multiplier", 3.0}}}},
      {"calibration.floors", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.floors", {{"atol", 1e-6}}}}}},
      {"calibration.false_alarm", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.false_alarm", {{"runs", 4}}}}}},
      {"calibration.detection", {"csv", {{"calibration", json{{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4}, {"multiplier", 1.5}}}, {"calibration.detection", {{"catches_lr_factor", 3e-5}}}}}},
      {"inject_nondeterminism", {"csv", {{"inject_nondeterminism", "index_put_accumulate"}}}},
      {"data.source",
       {"csv", {{"data.source", "synthetic"}, {"data.path", nullptr}, {"data.synthetic", {{"kind", "tabular"}}}}}},
      {"data.path", {"csv", {{"data.path", "e.csv"}}}},
      {"data.skip_rows", {"csv", {{"data.skip_rows", 1}}}},
      {"data.label_column", {"csv", {{"data.label_column", 0}}}},
      {"data.scale", {"csv", {{"data.scale", 2.0}}}},
      {"data.sample_shape", {"csv", {{"data.sample_shape", {5}}}}},
      {"data.batch_size", {"csv", {{"data.batch_size", 8}}}},
      {"data.workers", {"csv", {{"data.workers", 3}}}},
      {"data.shuffle", {"csv", {{"data.shuffle", false}}}},
      {"data.drop_last", {"csv", {{"data.drop_last", false}}}},
      {"data.augment.shift", {"images", {{"data.augment.shift", 1}}}},
      {"data.augment.flip", {"images", {{"data.augment.flip", true}}}},
      {"data.augment.noise_std", {"images", {{"data.augment.noise_std", 0.5}}}},
      {"data.augment.normalize.mean", {"images", {{"data.augment.normalize.mean", {0.1, 0.2, 0.3}}}}},
      {"data.augment.normalize.std", {"images", {{"data.augment.normalize.std", {2, 2, 2}}}}},
      {"data.probe_epochs", {"csv", {{"data.probe_epochs", 2}}}},
      {"data.synthetic.kind",
       {"tabular",
        {{"data.synthetic.kind", "images"}, {"data.sample_shape", {3, 4, 4}}, {"model", {{"name", "cnn"}, {"classes", 3}}}}}},
      {"data.synthetic.rows", {"tokens", {{"data.synthetic.rows", 128}}}},
      {"data.synthetic.vocab", {"tokens", {{"data.synthetic.vocab", 32}}}},
      {"data.image.interpolation", {"images", {{"data.image.interpolation", "linear"}}}},
      {"data.image.to_float", {"images", {{"data.image.to_float", "mul"}}}},
      {"data.image.manifest_sample", {"images", {{"data.image.manifest_sample", 2}}}},
      {"data.max_bytes", {"csv", {{"data.max_bytes", 1000000}}}},
      {"data.max_line_bytes", {"csv", {{"data.max_line_bytes", 100000}}}},
      {"data.max_batches", {"csv", {{"data.max_batches", 1000}}}},
      {"model.name", {"images", {{"model.name", "mlp"}}}},
      {"model.channels", {"images", {{"model.channels", 16}}}},
      {"model.hidden", {"csv", {{"model.hidden", 32}}}},
      {"model.dropout", {"csv", {{"model.dropout", 0.5}}}},
      {"model.d_model", {"tokens", {{"model.d_model", 16}}}},
      {"model.heads", {"tokens", {{"model.heads", 4}}}},
      {"model.ff", {"tokens", {{"model.ff", 32}}}},
      {"model.path", {"torchscript", {{"model.path", "n.pt"}}}},
      {"model.classes", {"csv", {{"model.classes", 4}}}},
      {"optimizer.name", {"csv", {{"optimizer.name", "adam"}}}},
      {"optimizer.lr", {"csv", {{"optimizer.lr", 0.2}}}},
      {"optimizer.momentum", {"csv", {{"optimizer.momentum", 0.5}}}},
      {"optimizer.nesterov", {"sgd-momentum", {{"optimizer.nesterov", true}}}},
      {"optimizer.weight_decay", {"csv", {{"optimizer.weight_decay", 0.01}}}},
      {"optimizer.betas", {"images", {{"optimizer.betas", {0.8, 0.99}}}}},
      {"optimizer.eps", {"images", {{"optimizer.eps", 1e-6}}}},
      {"optimizer.micro_batches", {"csv", {{"optimizer.micro_batches", 2}}}},
      {"optimizer.schedule.name", {"csv", {{"optimizer.schedule", {{"name", "warmup"}, {"warmup_steps", 2}}}}}},
      {"optimizer.schedule.warmup_steps", {"warmup", {{"optimizer.schedule.warmup_steps", 3}}}},
      {"optimizer.schedule.step_size", {"step-decay", {{"optimizer.schedule.step_size", 3}}}},
      {"optimizer.schedule.gamma", {"step-decay", {{"optimizer.schedule.gamma", 0.25}}}},
      {"distributed.world_size", {"ranks", {{"distributed.world_size", 4}}}},
      {"distributed.backend", {"ranks", {{"device", "cuda"}, {"distributed.backend", "nccl"}}}},
      {"distributed.timeout_s", {"ranks", {{"distributed.timeout_s", 60}}}},
      {"distributed.self_test.fault", {"rank-fault", {{"distributed.self_test.fault", "kill"}}}},
      {"distributed.self_test.rank", {"rank-fault", {{"distributed.self_test.rank", 1}}}},
      {"distributed.self_test.step", {"rank-fault", {{"distributed.self_test.step", 2}}}},
      {"trace.steps", {"csv", {{"trace.steps", 2}}}},
      {"trace.digests", {"csv", {{"trace.digests", false}}}},
      {"trace.ops", {"trainer", {{"trace.ops", true}}}},
      {"trace.self_test.module", {"traced", {{"trace.self_test.module", "fc2"}}}},
      {"trace.self_test.step", {"traced", {{"trace.self_test.step", 1}}}},
      {"trace.self_test.phase", {"traced", {{"trace.self_test.phase", "forward"}}}},
      {"trainer.command", {"trainer", {{"trainer.command", {"python3", "other.py"}}}}},
      {"trainer.cwd", {"trainer", {{"trainer.cwd", "sub"}}}},
      {"trainer.timeout_s", {"trainer", {{"trainer.timeout_s", 60}}}},
      {"trainer.metrics.format", {"trainer", {{"trainer.metrics.format", "csv"}, {"trainer.metrics.path", "{out}/m.csv"}}}},
      {"trainer.metrics.path", {"trainer", {{"trainer.metrics.path", "{out}/n.jsonl"}}}},
      {"trainer.metrics.series", {"trainer", {{"trainer.metrics.series", {{"loss", "train_loss"}}}}}},
      {"trainer.metrics.step", {"trainer", {{"trainer.metrics.step", "iteration"}}}},
      {"trainer.metrics.mllog_step", {"mllog", {{"trainer.metrics.mllog_step", "samples_count"}}}},
      {"trainer.probes", {"trainer", {{"trainer.probes", "{out}/q.jsonl"}}}},
      {"trainer.data_only", {"trainer", {{"trainer.data_only", {"--data-only"}}}}},
      {"trainer.workers", {"trainer-workers", {{"trainer.workers", {2, 0}}}}},
      {"trainer.resume.stop",
       {"resumable", {{"trainer.resume.stop", {"--stop-at", "{resume_at}", "--checkpoint", "{checkpoint}"}}}}},
      {"trainer.resume.continue", {"resumable", {{"trainer.resume.continue", {"--from", "{checkpoint}"}}}}},
      {"trainer.env", {"trainer", {{"trainer.env", {{"X", "1"}}}}}},
      {"trainer.inputs", {"trainer", {{"trainer.inputs", {"data/*.bin"}}}}},
      {"trainer.packages.relevant", {"trainer", {{"trainer.packages.relevant", {"numpy"}}}}},
      {"trainer.packages.informational", {"trainer", {{"trainer.packages.informational", {"pillow"}}}}},
  };
  return m;
}

// Sets (or with null erases) `path` in `doc`, creating objects on the way.
void edit(json& doc, const std::string& path, const json& value) {
  json* node = &doc;
  std::stringstream parts(path);
  std::vector<std::string> keys;
  for (std::string k; std::getline(parts, k, '.');) keys.push_back(k);
  for (size_t i = 0; i + 1 < keys.size(); ++i) node = &(*node)[keys[i]];
  if (value.is_null()) node->erase(keys.back());
  else (*node)[keys.back()] = value;
}

class ConfigKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-config-keys-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // config.values_xxh3 of `doc`; a config the parser refuses fails the test.
  std::string values_hash(const json& doc, const std::string& what) {
    std::string path = (dir_ / "keys.json").string();
    write_file_atomically(path, doc.dump());
    try {
      return load_smoke_config(path).values_hash;
    } catch (const Error& e) {
      ADD_FAILURE() << what << ": " << e.what();
      return "";
    }
  }
  fs::path dir_;
};

bool has_children(const std::string& path) {
  for (const ConfigKey& k : smoke_config_keys())
    if (k.path.size() > path.size() + 1 && k.path.substr(0, path.size()) == path && k.path[path.size()] == '.')
      return true;
  return false;
}

TEST_F(ConfigKeys, EachKeyMovesTheValueHashExactlyWhenTheTableSaysSo) {
  size_t leaves = 0;
  for (const ConfigKey& k : smoke_config_keys()) {
    const std::string path(k.path);
    EXPECT_FALSE(k.doc.empty()) << path;
    if (has_children(path)) continue;
    ++leaves;
    auto it = changes().find(path);
    ASSERT_NE(it, changes().end()) << path << ": a key of the table without a change in this test";
    json before = base(it->second.family), after = before;
    for (const auto& [p, v] : it->second.edits) edit(after, p, v);
    std::string h0 = values_hash(before, it->second.family), h1 = values_hash(after, path);
    if (h0.empty() || h1.empty()) continue;
    EXPECT_EQ(h0 != h1, k.moves_values) << path << (k.moves_values ? " should move" : " should not move")
                                        << " config.values_xxh3";
  }
  EXPECT_EQ(leaves, changes().size()) << "a change for a key the table does not list";
}

// A section moves the hash when one of its keys does.
TEST(ConfigKeyTable, ASectionMovesTheHashWhenAKeyInItDoes) {
  std::set<std::string> paths;
  for (const ConfigKey& k : smoke_config_keys()) {
    const std::string path(k.path);
    EXPECT_TRUE(paths.insert(path).second) << path << " is listed twice";
    if (!has_children(path)) continue;
    bool any = false;
    for (const ConfigKey& c : smoke_config_keys())
      if (c.path.size() > path.size() && c.path.substr(0, path.size() + 1) == path + ".") any = any || c.moves_values;
    EXPECT_EQ(k.moves_values, any) << path;
    // Parents come before their children.
    const std::string parent = path.substr(0, path.rfind('.') == std::string::npos ? 0 : path.rfind('.'));
    if (!parent.empty()) {
      EXPECT_TRUE(paths.count(parent)) << path << " before its parent " << parent;
    }
  }
  EXPECT_EQ(keys_under("data.augment"), (std::vector<std::string_view>{"shift", "flip", "noise_std", "normalize"}));
  EXPECT_EQ(keys_under("trainer.resume"), (std::vector<std::string_view>{"stop", "continue"}));
}

// The keys outside the value hash are the documented exclusion list.
TEST(ConfigKeyTable, TheKeysOutsideTheValueHashAreDocumented) {
  std::ifstream in(test_paths::source_dir() + "/docs/smoke-config.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  size_t at = doc.find("## Keys outside the value hash");
  ASSERT_NE(at, std::string::npos) << "docs/smoke-config.md has no section \"Keys outside the value hash\"";
  std::string section = doc.substr(at, doc.find("\n## ", at + 1) - at);
  for (const ConfigKey& k : smoke_config_keys()) {
    if (!k.moves_values) {
      EXPECT_NE(section.find("`" + std::string(k.path) + "`"), std::string::npos) << k.path << " is not listed";
    }
  }
}

}  // namespace
}  // namespace lockstep

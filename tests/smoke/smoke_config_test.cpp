// The smoke config in-process: the loader and augmentation specs it embeds,
// overrides, and where goldens are found.
#include "smoke/smoke_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"
#include "record/platform_key.h"
#include "smoke/golden_store.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

TEST(SmokeConfig, DataSectionIsTheLoaderSpecItself) {
  testing::GateProject p("config", [](nlohmann::json& cfg) {
    cfg["data"] = {{"source", "synthetic"},
                   {"synthetic", {{"kind", "images"}, {"rows", 64}}},
                   {"sample_shape", {3, 4, 4}},
                   {"batch_size", 8},
                   {"workers", 2},
                   {"shuffle", false},
                   {"augment", {{"shift", 1}, {"flip", true}, {"noise_std", 0.5},
                                {"normalize", {{"mean", {0.1, 0.2, 0.3}}, {"std", {1, 2, 3}}}}}}};
    cfg["model"] = {{"name", "cnn"}, {"classes", 4}};
    cfg["inject_nondeterminism"] = "worker_seeded_augment";
  });
  SmokeConfig c = load_smoke_config(p.smoke_file());
  const LoaderSpec& l = c.data.loader;
  EXPECT_EQ(l.sample_shape, (std::vector<int64_t>{3, 4, 4}));
  EXPECT_EQ(l.batch_size, 8);
  EXPECT_EQ(l.workers, 2);
  EXPECT_FALSE(l.shuffle);
  EXPECT_TRUE(l.drop_last);
  EXPECT_EQ(l.augment.max_shift, 1);
  EXPECT_TRUE(l.augment.flip);
  EXPECT_EQ(l.augment.noise_std, 0.5);
  EXPECT_EQ(l.augment.mean, (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_EQ(l.augment.std, (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(l.augment.worker_seeded);
  EXPECT_EQ(c.data.synthetic_rows, 64);
  EXPECT_EQ(c.config_hash.size(), 16u);

  SmokeConfig o = with_overrides(c, {4, 0});
  EXPECT_EQ(o.intra_op_threads, 4);
  EXPECT_EQ(o.data.loader.workers, 0);
  EXPECT_EQ(o.config_hash, c.config_hash);
  SmokeConfig same = with_overrides(c, {});
  EXPECT_EQ(same.intra_op_threads, 1);
  EXPECT_EQ(same.data.loader.workers, 2);
}

TEST(SmokeConfig, DefaultsAndDataPathResolution) {
  testing::GateProject p("defaults");
  SmokeConfig c = load_smoke_config(p.smoke_file());
  EXPECT_EQ(c.name, "unit");
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.mode, "strict");
  EXPECT_EQ(c.repeat, 2);
  EXPECT_EQ(c.intra_op_threads, 1);
  EXPECT_EQ(c.data.loader.workers, 0);
  EXPECT_TRUE(c.data.loader.shuffle);
  EXPECT_FALSE(c.data.loader.augment.enabled());
  EXPECT_FALSE(c.data.loader.augment.worker_seeded);
  EXPECT_EQ(c.trace.steps, 2);
  // The default trace.steps never exceeds the smoke's steps: a 1-step
  // smoke's records stay readable (a trace longer than the run is refused).
  testing::GateProject one("one-step", [](nlohmann::json& cfg) {
    cfg["steps"] = 1;
    cfg.erase("resume_at");
  });
  EXPECT_EQ(load_smoke_config(one.smoke_file()).trace.steps, 1);
  // Relative: beside the config; "{data}/": lockstep's fetched datasets.
  EXPECT_EQ(c.data.resolved_path,
            (fs::absolute(p.smoke_file()).parent_path() / "unit.csv").lexically_normal().string());
  testing::GateProject fetched("fetched", [](nlohmann::json& cfg) { cfg["data"]["path"] = "{data}/digits.csv.gz"; });
  EXPECT_EQ(load_smoke_config(fetched.smoke_file()).data.resolved_path,
            (fs::path(data_dir()) / "digits.csv.gz").lexically_normal().string());
  testing::GateProject absolute("absolute", [](nlohmann::json& cfg) { cfg["data"]["path"] = "/srv/x/../d.csv"; });
  EXPECT_EQ(load_smoke_config(absolute.smoke_file()).data.resolved_path, "/srv/d.csv");
  for (const std::string& bad : std::vector<std::string>{"{data}x.csv", "{out}/x.csv", "data/{x}.csv", "", "{data}", "{data}/", "{data}//etc/passwd",
                                                         "{data}/../../etc/passwd", std::string("local.csv\0x", 11),
                                                         "a\nb.csv"}) {
    testing::GateProject b("bad-path", [&](nlohmann::json& cfg) { cfg["data"]["path"] = bad; });
    try {
      load_smoke_config(b.smoke_file());
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << bad;
      EXPECT_NE(std::string(e.what()).find(": data.path: expected "), std::string::npos) << e.what();
    }
  }
}

TEST(SmokeConfig, AugmentationOfNonImageSamplesNamesTheField) {
  testing::GateProject p("augment-1d", [](nlohmann::json& cfg) { cfg["data"]["augment"] = {{"flip", true}}; });
  try {
    load_smoke_config(p.smoke_file());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), p.smoke_file() + ": data.augment: expected augmentation only for image samples: "
                                                      "data.sample_shape must be [C, H, W]");
  }
}

// The calibration block calibrate --write leaves is held to its shape.
TEST(SmokeConfig, AHandMadeCalibrationBlockIsHeldToItsShape) {
  const nlohmann::json good = {{"date", "2026-12-03T10:00:00Z"}, {"axes", {{"threads", {"1", "2"}}}}, {"runs", 4},
                               {"multiplier", 1.5}, {"runners", {"host a"}},
                               {"detection", {{"catches_lr_factor", 0.001}, {"misses_lr_factor", 0.000316}}}};
  testing::GateProject ok("calibration-ok", [&](nlohmann::json& cfg) { cfg["calibration"] = good; });
  EXPECT_NO_THROW(load_smoke_config(ok.smoke_file()));
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> bad = {
      {[](nlohmann::json& b) { b = nlohmann::json::object(); }, "calibration: expected a \"date\" field"},
      {[](nlohmann::json& b) { b["date"] = "2026-02-30T10:00:00Z"; }, "calibration.date: expected a UTC time"},
      {[](nlohmann::json& b) { b["axes"] = {{"threads", {"0"}}}; }, "calibration.axes.threads[0]"},
      {[](nlohmann::json& b) { b["axes"] = {{"capability", {"sse9"}}}; }, "default, avx2 or avx512"},
      {[](nlohmann::json& b) { b["runners"] = {""}; }, "calibration.runners[0]"},
      {[](nlohmann::json& b) { b["detection"] = {{"catches_lr_factor", 0.001}, {"misses_lr_factor", 0.01}}; },
       "a factor below catches_lr_factor"},
      {[](nlohmann::json& b) { b["detection"] = nlohmann::json::object(); }, "catches_lr_factor (or not_measured)"},
      {[](nlohmann::json& b) { b["multiplier"] = 0; }, "calibration.multiplier"},
  };
  for (const auto& c : bad) {
    const auto& edit = c.first;
    const std::string& expected = c.second;
    testing::GateProject p("calibration-bad", [&](nlohmann::json& cfg) {
      nlohmann::json b = good;
      edit(b);
      cfg["calibration"] = b;
    });
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted, expected: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

// Equivalence lanes: parsed in name order, each loaded as a config of its
// own; a lane's config names it (values "variant"), so its record is never
// mistaken for the base run's.
TEST(SmokeConfig, AnEquivalenceLaneIsTheBaseConfigWithItsChanges) {
  testing::GateProject p("lanes", [](nlohmann::json& cfg) {
    cfg["equivalence"] = nlohmann::json::parse(R"({
      "workers0": {"set": {"data": {"workers": 0}}},
      "batch2": {"set": {"data": {"batch_size": 2}}, "rule": {"ulp": 4}, "same_batches": false}})");
  });
  SmokeConfig base = load_smoke_config(p.smoke_file());
  ASSERT_EQ(base.equivalence.size(), 2u);
  // Lanes are runs of their own: adding them leaves the base run's config hash.
  testing::GateProject plain("lanes-none");
  EXPECT_EQ(base.config_hash, load_smoke_config(plain.smoke_file()).config_hash);
  EXPECT_EQ(base.equivalence[0].name, "batch2");
  EXPECT_EQ(base.equivalence[0].rule.rule, Tolerance::Rule::kUlp);
  EXPECT_EQ(base.equivalence[0].rule.max_ulp, 4u);
  EXPECT_FALSE(base.equivalence[0].same_batches);
  EXPECT_EQ(base.equivalence[0].describe(), R"(set {"data":{"batch_size":2}})");
  EXPECT_EQ(base.equivalence[1].rule.rule, Tolerance::Rule::kExact);
  EXPECT_TRUE(base.equivalence[1].same_batches);
  SmokeConfig lane = load_smoke_config(p.smoke_file(), "batch2");
  EXPECT_EQ(lane.variant, "batch2");
  EXPECT_EQ(lane.data.loader.batch_size, 2);
  EXPECT_TRUE(lane.equivalence.empty());
  EXPECT_EQ(lane.values_fields.at("variant"), "\"batch2\"");
  EXPECT_NE(lane.values_hash, base.values_hash);
  // data.workers is outside the value hash: only the lane's name moves it.
  SmokeConfig workers = load_smoke_config(p.smoke_file(), "workers0");
  EXPECT_EQ(workers.data.loader.workers, 0);
  EXPECT_NE(workers.values_hash, base.values_hash);
  try {
    load_smoke_config(p.smoke_file(), "accum2");
    ADD_FAILURE() << "an unknown lane was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("equivalence: expected a lane named \"accum2\" (its lanes: batch2, workers0)"),
              std::string::npos)
        << e.what();
  }
}

TEST(SmokeConfig, ALaneThatCannotRunOrChangesWhatJudgesIsRefusedNamingIt) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"a": {"set": {"seed": 7}}})", "equivalence.a.set.seed: expected no \"seed\" in a lane"},
      {R"({"a": {"set": {"tolerance": {}}}})", "equivalence.a.set.tolerance: expected no \"tolerance\" in a lane"},
      {R"({"a": {"set": {"device": "cuda"}}})",
       "equivalence.a.set.device: expected no \"device\" in a lane: both runs of a lane run on the smoke's device"},
      {R"({"a": {"rule": {"ulp": 2}}})", "equivalence.a: expected \"set\", \"args\" or \"env\""},
      {R"({"a": {"set": {}}})", "equivalence.a.set: expected at least one field to change"},
      {R"({"a": {"args": ["--accum", "2"]}})", "equivalence.a.args: expected no \"args\" for a built-in smoke"},
      {R"({"a": {"set": {"data": {"batch_size": 0}}}})", "equivalence.a: expected a lane whose config loads"},
      {R"({"a": {"set": {"data": {"workers": 0}}, "rule": {"sigma": 3}}})", "equivalence.a.rule: expected {\"exact\": true}"},
      {R"({"a b": {"set": {"data": {"workers": 0}}}})", "equivalence.a b: expected a lane name"},
      {R"({"a": {"set": {"data": {"workers": 0}}, "same": true}})", "equivalence.a"},
      {R"({"a": {"set": {"data": {"batch_size": 4}}}})", "equivalence.a: expected a lane that changes the config"},
      {R"({"a": {"set": {"min_driver": null}}})", "equivalence.a: expected a lane that changes the config"},
      {R"({"a": {"set": {"data": {"workers": 0}}, "env": {}}})", "equivalence.a.env: expected no \"env\" for a built-in"},
  };
  for (const auto& c : bad) {
    const std::string& lanes = c.first;
    const std::string& expected = c.second;
    testing::GateProject p("lanes-bad", [&](nlohmann::json& cfg) { cfg["equivalence"] = nlohmann::json::parse(lanes); });
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted: " << lanes;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << lanes;
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << lanes << "\n" << e.what();
    }
  }
}

// A platform key no run of the smoke would make files a golden nothing
// reads, and verify-goldens would ask for it forever.
TEST(SmokeConfig, PlatformsAreKeysRunsOfThisSmokeMakeEachOnce) {
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{"dgx_h100"}, "platforms[0]: expected a platform key such as \"cpu-x86_64-avx2\" or \"cuda-sm90\" "
                     "(docs/platforms.md), got \"dgx_h100\""},
      {{"cpu-x86_64-avx2", "cuda-sm90"}, "platforms[1]: expected a cpu platform key: the smoke runs on device cpu, so "
                                         "no run of it makes a golden for cuda-sm90"},
      {{"cpu-x86_64-avx2", "cpu-x86_64-avx2"}, "platforms[1]: expected each platform once, got \"cpu-x86_64-avx2\" twice"},
      {{"cpu--avx2"}, "platforms[0]: expected a platform key such as \"cpu-x86_64-avx2\" or \"cuda-sm90\" "
                      "(docs/platforms.md), got \"cpu--avx2\""},
      {{"cpu-x86_64-avx22"}, "platforms[0]: expected a platform key whose last part is an ATen CPU capability, got "
                             "\"cpu-x86_64-avx22\" (did you mean \"cpu-x86_64-avx2\"?)"},
  };
  for (const auto& c : bad) {
    const nlohmann::json& platforms = c.first;
    const std::string& expected = c.second;
    testing::GateProject p("platforms-bad", [&](nlohmann::json& cfg) { cfg["platforms"] = platforms; });
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted: " << platforms.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(std::string(e.what()), p.smoke_file() + ": " + expected) << e.what();
    }
  }
  testing::GateProject ok("platforms-ok", [](nlohmann::json& cfg) {
    cfg["platforms"] = {"cpu-x86_64-avx2", "cpu-x86_64-default", "cpu-aarch64-default", "cpu-riscv64-rvv"};
  });
  EXPECT_EQ(load_smoke_config(ok.smoke_file()).platforms.size(), 4u);  // a capability newer than the list is taken
}

// What check's second repeat varies: every kind by default, the kinds
// listed, or none; it never moves the values hash (how the check judges).
TEST(SmokeConfig, RepeatVariesListsKindsEachOnce) {
  testing::GateProject plain("repeat-varies-default");
  const SmokeConfig d = load_smoke_config(plain.smoke_file());
  EXPECT_EQ(d.repeat_varies, variation_kinds());
  testing::GateProject two("repeat-varies-two", [](nlohmann::json& c) { c["repeat_varies"] = {"env-order", "allocator"}; });
  const SmokeConfig t = load_smoke_config(two.smoke_file());
  EXPECT_EQ(t.repeat_varies, (std::vector<std::string>{"env-order", "allocator"}));
  EXPECT_EQ(t.values_hash, d.values_hash);
  testing::GateProject none("repeat-varies-none", [](nlohmann::json& c) { c["repeat_varies"] = nlohmann::json::array(); });
  EXPECT_TRUE(load_smoke_config(none.smoke_file()).repeat_varies.empty());
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{"heap"}, "repeat_varies[0]: expected one of \"allocator\", \"malloc-perturb\", \"affinity\", \"env-order\", "
                 "\"thread-warmup\", got \"heap\""},
      {{"env-order", "env-order"}, "repeat_varies[1]: expected each kind once, got \"env-order\" twice"},
      {"allocator", "repeat_varies: expected an array, got string"},
  };
  for (const auto& c : bad) {
    testing::GateProject p("repeat-varies-bad", [&](nlohmann::json& cfg) { cfg["repeat_varies"] = c.first; });
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted: " << c.first.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(std::string(e.what()), p.smoke_file() + ": " + c.second) << e.what();
    }
  }
}

// Gradient accumulation splits a batch into equal micro-batches: a count
// that does not divide it, or a short last batch, is refused.
TEST(SmokeConfig, MicroBatchesDivideTheBatchOfEveryStep) {
  testing::GateProject ok("micro-ok", [](nlohmann::json& c) { c["optimizer"]["micro_batches"] = 2; });
  EXPECT_EQ(load_smoke_config(ok.smoke_file()).optimizer.micro_batches, 2);
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> bad = {
      {[](nlohmann::json& c) { c["optimizer"]["micro_batches"] = 3; },
       "optimizer.micro_batches: expected a divisor of data.batch_size 4 (micro-batches of equal size), got 3"},
      {[](nlohmann::json& c) {
         c["optimizer"]["micro_batches"] = 2;
         c["data"]["drop_last"] = false;
       },
       "optimizer.micro_batches: expected 1 unless data.drop_last is true (a short last batch would not split "
       "evenly)"},
      {[](nlohmann::json& c) { c["optimizer"]["micro_batches"] = 0; },
       "optimizer.micro_batches: expected an integer in [1, 4096], got 0"},
  };
  for (const auto& [edit, expected] : bad) {
    testing::GateProject p("micro-bad", edit);
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), p.smoke_file() + ": " + expected);
    }
  }
}

// A varied run is no other input: its values hash is the plain run's.
TEST(SmokeConfig, AVariationIsNotAnInput) {
  testing::GateProject p("vary-not-input");
  const SmokeConfig plain = load_smoke_config(p.smoke_file());
  RunOverrides o;
  o.vary.allocator_bytes = 70000;
  o.vary.env_reversed = true;
  const SmokeConfig varied = with_overrides(plain, o);
  EXPECT_EQ(varied.values_hash, plain.values_hash);
  EXPECT_EQ(varied.values_fields, plain.values_fields);
  EXPECT_EQ(varied.vary, o.vary);
}

TEST(SmokeConfig, ATrainerLaneAddsArgumentsAndEnvironmentOfTheRightShape) {
  auto trainer = [](const std::string& lanes) {
    return [lanes](nlohmann::json& c) {
      c = {{"schema", 1}, {"name", "unit"}, {"seed", 7}, {"steps", 2},
           {"trainer", {{"command", {"/usr/bin/python3", "train.py"}},
                        {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
      c["equivalence"] = nlohmann::json::parse(lanes);
    };
  };
  testing::GateProject ok("lanes-trainer", trainer(R"({"accum2": {"args": ["--accum", "2"], "env": {"K": "1"}}})"));
  SmokeConfig lane = load_smoke_config(ok.smoke_file(), "accum2");
  EXPECT_EQ(lane.trainer.command, (std::vector<std::string>{"/usr/bin/python3", "train.py", "--accum", "2"}));
  EXPECT_EQ(lane.trainer.env.at("K"), "1");
  EXPECT_EQ(load_smoke_config(ok.smoke_file()).equivalence[0].describe(), "trainer args --accum 2, env K=1");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"a": {"args": []}})", "equivalence.a.args: expected at least one argument"},
      {R"({"a": {"env": {}}})", "equivalence.a.env: expected at least one variable"},
      {R"({"a": {"set": {"trainer": {"command": "garbage"}}, "args": ["x"]}})",
       "equivalence.a: expected a lane whose args go onto trainer.command (an array)"},
      {R"({"a": {"set": {"trainer": {"env": ["x"]}}, "env": {"A": "1"}}})",
       "equivalence.a: expected a lane whose args go onto trainer.command (an array) and env into trainer.env"},
  };
  for (const auto& [lanes, expected] : bad) {
    testing::GateProject p("lanes-trainer-bad", trainer(lanes));
    try {
      load_smoke_config(p.smoke_file());
      ADD_FAILURE() << "accepted: " << lanes;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << lanes;
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << lanes << "\n" << e.what();
    }
  }
}

TEST(GoldenStore, ExactPlatformFirstThenTheFamilyByName) {
  fs::path root = fs::temp_directory_path() / ("lockstep-golden-store-" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* f : {"cpu-x86_64-avx512.json", "cpu-x86_64-avx2.json", "cuda-sm90.json", "notes.txt"})
    write_file_atomically((root / "s" / f).string(), "{}");
  auto exact = find_golden(root.string(), "s", "cpu-x86_64-avx2");
  ASSERT_TRUE(exact.has_value());
  EXPECT_TRUE(exact->exact_platform);
  EXPECT_EQ(exact->path, (root / "s" / "cpu-x86_64-avx2.json").string());
  auto family = find_golden(root.string(), "s", "cpu-x86_64-default");
  ASSERT_TRUE(family.has_value());
  EXPECT_FALSE(family->exact_platform);
  EXPECT_EQ(family->path, (root / "s" / "cpu-x86_64-avx2.json").string());  // byte-wise first of the family
  EXPECT_FALSE(find_golden(root.string(), "s", "cpu-aarch64-neon").has_value());
  EXPECT_FALSE(find_golden(root.string(), "other", "cpu-x86_64-avx2").has_value());
  EXPECT_EQ(goldens_root("/r/smoke/a.json", ""), "/r/goldens");
  EXPECT_EQ(pending_path("out", "s", "cuda-sm90"), "out/s/cuda-sm90.golden.new");
  fs::remove_all(root);
}

// Under a stack label: the label's own golden, then its family under the
// label, then the unlabeled goldens (a migration's first runs); an
// unlabeled run never takes a labeled golden.
TEST(GoldenStore, AStackLabelPicksItsOwnGoldensFirstThenTheUnlabeled) {
  fs::path root = fs::temp_directory_path() / ("lockstep-golden-stack-" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* f : {"cpu-x86_64-avx2.json", "cpu-x86_64-avx512@torch2.json", "cuda-sm90@torch2.json"})
    write_file_atomically((root / "s" / f).string(), "{}");
  auto own_family = find_golden(root.string(), "s", "cpu-x86_64-avx2", "torch2");
  ASSERT_TRUE(own_family.has_value());
  EXPECT_EQ(own_family->path, (root / "s" / "cpu-x86_64-avx512@torch2.json").string());
  EXPECT_FALSE(own_family->exact_platform);
  EXPECT_TRUE(own_family->exact_stack);
  auto fallback = find_golden(root.string(), "s", "cpu-x86_64-avx2", "lts");
  ASSERT_TRUE(fallback.has_value());
  EXPECT_EQ(fallback->path, (root / "s" / "cpu-x86_64-avx2.json").string());
  EXPECT_TRUE(fallback->exact_platform);
  EXPECT_FALSE(fallback->exact_stack);
  auto cuda = find_golden(root.string(), "s", "cuda-sm90", "torch2");
  ASSERT_TRUE(cuda.has_value());
  EXPECT_TRUE(cuda->exact_platform && cuda->exact_stack);
  EXPECT_FALSE(find_golden(root.string(), "s", "cuda-sm90").has_value());  // unlabeled: never a labeled one
  EXPECT_EQ(stand_in_note(*cuda, "cuda-sm90", "torch2"), "");
  EXPECT_EQ(pending_path("out", "s", golden_key("cuda-sm90", "torch2")), "out/s/cuda-sm90@torch2.golden.new");
  EXPECT_EQ(pending_platform_of("cuda-sm90@torch2.golden.new"), "cuda-sm90@torch2");
  EXPECT_EQ(split_golden_key("cuda-sm90@torch2"), (std::pair<std::string, std::string>{"cuda-sm90", "torch2"}));
  fs::remove_all(root);
}

TEST(GoldenStore, TheStackLabelComesFromItsVariableAndMustNameAFile) {
  ::unsetenv("LOCKSTEP_STACK");
  EXPECT_EQ(stack_label(), "");
  ::setenv("LOCKSTEP_STACK", "", 1);
  EXPECT_EQ(stack_label(), "");
  ::setenv("LOCKSTEP_STACK", "torch-2.6_dev", 1);
  EXPECT_EQ(stack_label(), "torch-2.6_dev");
  for (const char* bad : {"a/b", "@x", "-x", ".x", "a b", "x@y"}) {
    ::setenv("LOCKSTEP_STACK", bad, 1);
    try {
      stack_label();
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(std::string(e.what()).rfind(std::string("LOCKSTEP_STACK=") + bad + ": expected a stack label", 0), 0u)
          << e.what();
    }
  }
  ::unsetenv("LOCKSTEP_STACK");
  EXPECT_TRUE(is_golden_key("cpu-x86_64-avx2@torch2"));
  EXPECT_FALSE(is_golden_key("cpu-x86_64-avx2@"));
  EXPECT_FALSE(is_golden_key("cpu-x86_64-avx2@a@b"));
  EXPECT_TRUE(is_stack_label(std::string(40, 'a')));
  EXPECT_FALSE(is_stack_label(std::string(41, 'a')));
}

// The config as an input: what determines the values, as parsed. Writing a
// default out, the worker count, resume_at and the reader caps change nothing.
TEST(SmokeConfig, ValuesHashCoversWhatDeterminesTheValuesOnly) {
  auto hash_of = [](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    testing::GateProject p(name, edit);
    return load_smoke_config(p.smoke_file()).values_hash;
  };
  std::string h = hash_of("values-a", {});
  EXPECT_EQ(hash_of("values-workers", [](nlohmann::json& c) { c["data"]["workers"] = 3; }), h);
  EXPECT_EQ(hash_of("values-default", [](nlohmann::json& c) { c["optimizer"]["momentum"] = 0.9; }), h);
  EXPECT_EQ(hash_of("values-resume", [](nlohmann::json& c) { c["resume_at"] = 1; }), h);
  EXPECT_EQ(hash_of("values-caps", [](nlohmann::json& c) { c["data"]["max_bytes"] = 1000; }), h);
  EXPECT_EQ(hash_of("values-tol", [](nlohmann::json& c) { c["tolerance"] = {{"same_stack", "tolerance"}}; }), h);
  EXPECT_NE(hash_of("values-lr", [](nlohmann::json& c) { c["optimizer"]["lr"] = 0.2; }), h);
  EXPECT_NE(hash_of("values-seed", [](nlohmann::json& c) { c["seed"] = 43; }), h);
  EXPECT_NE(hash_of("values-batch", [](nlohmann::json& c) { c["data"]["batch_size"] = 2; }), h);
}


// A smoke with a "trainer" section: the team's own trainer as a command.
class TrainerConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-trainer-config-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const nlohmann::json& trainer, const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json cfg = {{"name", "mine"}, {"seed", 3}, {"steps", 10}, {"trainer", trainer}};
    cfg.update(extra);
    std::string path = (dir_ / "mine.json").string();
    write_file_atomically(path, cfg.dump());
    return path;
  }
  nlohmann::json trainer() {
    return {{"command", {"python3", "train.py", "--steps", "{steps}"}},
            {"cwd", "sub"},
            {"metrics", {{"format", "tensorboard"}, {"path", "{out}/tb"}, {"series", {{"loss", "train/loss"}}}}},
            {"probes", "{out}/probes.jsonl"},
            {"data_only", {"--data-only"}},
            {"resume", {{"stop", {"--stop-after", "{resume_at}", "--checkpoint", "{checkpoint}"}},
                        {"continue", {"--resume", "{checkpoint}"}}}}};
  }
  std::string error_of(const std::string& path) {
    try {
      load_smoke_config(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(TrainerConfig, ParsesTheSectionAndResolvesCwd) {
  SmokeConfig c = load_smoke_config(write(trainer(), {{"resume_at", 4}}));
  ASSERT_TRUE(c.has_trainer());
  EXPECT_EQ(c.trainer.command, (std::vector<std::string>{"python3", "train.py", "--steps", "{steps}"}));
  EXPECT_EQ(c.trainer.resolved_cwd, (fs::absolute(dir_) / "sub").lexically_normal().string());
  EXPECT_EQ(c.trainer.timeout_s, 600);
  EXPECT_EQ(c.trainer.metrics_format, "tensorboard");
  EXPECT_EQ(c.trainer.series, (std::map<std::string, std::string>{{"loss", "train/loss"}}));
  EXPECT_EQ(c.trainer.data_only, (std::vector<std::string>{"--data-only"}));
  EXPECT_EQ(c.trainer.resume_continue, (std::vector<std::string>{"--resume", "{checkpoint}"}));
  EXPECT_EQ(c.resume_at, 4);
  EXPECT_EQ(values_json(c).at("trainer").at("command").size(), 4u);
}

// The processes of one run of a trainer smoke: its training pass, and its
// data-only passes (one per worker count) that run beside it, per rank;
// check's runs, which leave the data-only pass out, count the ranks alone.
TEST_F(TrainerConfig, ARunKeepsItsPassesBusyAtOnce) {
  nlohmann::json t = trainer();
  EXPECT_EQ(processes_per_run(load_smoke_config(write(t))), 2);
  nlohmann::json no_probes = t;
  no_probes.erase("probes");
  no_probes.erase("data_only");
  EXPECT_EQ(processes_per_run(load_smoke_config(write(no_probes))), 1);  // no data-only pass
  t["command"] = {"python3", "train.py", "--workers", "{workers}"};
  t["workers"] = {2, 0};
  EXPECT_EQ(processes_per_run(load_smoke_config(write(t))), 3);
  t.erase("resume");
  EXPECT_EQ(processes_per_run(load_smoke_config(write(t, {{"distributed", {{"world_size", 2}}}}))), 6);
  EXPECT_EQ(processes_per_run(load_smoke_config(write(t, {{"distributed", {{"world_size", 2}}}})), false), 2);
  EXPECT_EQ(processes_per_run(load_smoke_config(write(t)), /*with_data_pass=*/false), 1);
}

// A value quoted back from the config is cut at 64 bytes with its length
// said: a megabyte-long name never floods a CI log.
TEST_F(TrainerConfig, ALongBadNameIsQuotedCut) {
  std::string path = write(trainer(), {{"name", std::string(100000, '/')}});
  EXPECT_EQ(error_of(path), path +
                                ": name: expected a name of letters, digits, '.', '_' and '-' not starting with '.' "
                                "(it names the golden folder), got \"" + std::string(64, '/') + "... (100000 bytes)\"");
}

TEST_F(TrainerConfig, RefusesWhatCannotWork) {
  nlohmann::json t = trainer();
  EXPECT_NE(error_of(write(t, {{"model", {{"name", "cnn"}}}})).find("model: expected no model beside \"trainer\""),
            std::string::npos);
  t["command"] = nlohmann::json::array();
  EXPECT_NE(error_of(write(t)).find("trainer.command: expected a non-empty list of arguments"), std::string::npos);
  t = trainer();
  t["command"][3] = "{step}";
  EXPECT_NE(error_of(write(t)).find("got {step}"), std::string::npos);
  t = trainer();
  t["metrics"]["format"] = "tfevents";
  EXPECT_NE(error_of(write(t)).find("trainer.metrics.format"), std::string::npos);
  t = trainer();
  t.erase("probes");
  EXPECT_NE(error_of(write(t)).find("a \"probes\" file beside it"), std::string::npos);
  t = trainer();
  t.erase("resume");
  EXPECT_NE(error_of(write(t, {{"resume_at", 4}})).find("resume_at: expected a trainer.resume section"),
            std::string::npos);
  t = trainer();
  t["env"] = {{"LOCKSTEP_SEED", "1"}};
  EXPECT_NE(error_of(write(t)).find("a variable lockstep does not set itself (LOCKSTEP_*"), std::string::npos);
  t["env"] = {{"OMP_NUM_THREADS", "8"}};
  EXPECT_NE(error_of(write(t)).find("trainer.env.OMP_NUM_THREADS: expected a variable lockstep does not set itself"), std::string::npos);
  t = trainer();
  EXPECT_NE(error_of(write(t, {{"tolerance", {{"series", {{"los", {{"atol", 0.1}}}}}}}})).find("did you mean 'loss'"),
            std::string::npos);
  t = trainer();
  t["inputs"] = nlohmann::json::array();
  EXPECT_NE(error_of(write(t)).find("trainer.inputs: expected 1 to 64 glob patterns of the data files the trainer "
                                    "reads"), std::string::npos);
  t["inputs"] = {"data/*.bin", "{out}/train.bin"};
  EXPECT_NE(error_of(write(t)).find("trainer.inputs[1]: expected a glob pattern relative to trainer.cwd (no NUL "
                                    "bytes; placeholders {data} and {config_dir} only), e.g. \"data/*.bin\", got "
                                    "\"{out}/train.bin\""),
            std::string::npos);
  t["inputs"] = {"data/*.bin", "{data}/digits.csv.gz"};
  EXPECT_EQ(load_smoke_config(write(t)).trainer.inputs, (std::vector<std::string>{"data/*.bin", "{data}/digits.csv.gz"}));
}

// The data-only pass runs whenever the trainer writes probes; "data_only"
// adds arguments to it and may be empty.
TEST_F(TrainerConfig, TheDataOnlyPassFollowsTheProbes) {
  nlohmann::json t = trainer();
  t["data_only"] = nlohmann::json::array();
  SmokeConfig empty = load_smoke_config(write(t));
  EXPECT_TRUE(empty.trainer.has_data_pass());
  EXPECT_TRUE(empty.trainer.data_only.empty());
  EXPECT_EQ(missing_data_pass_note(empty), "");
  t.erase("data_only");
  SmokeConfig absent = load_smoke_config(write(t));
  EXPECT_TRUE(absent.trainer.has_data_pass());
  EXPECT_EQ(absent.values_hash, empty.values_hash);  // [] and no key are one value
  t.erase("probes");
  SmokeConfig none = load_smoke_config(write(t));
  EXPECT_FALSE(none.trainer.has_data_pass());
  EXPECT_EQ(missing_data_pass_note(none),
            "no data-only pass: " + (dir_ / "mine.json").string() + " sets no trainer.probes, so the batches the "
            "trainer consumed are not checked (worker seeding, sampler order, augmentation); write them with the "
            "helper's ProbeWriter (docs/trainers.md)");
}

// trainer.workers: the DataLoader worker counts of the data-only passes,
// passed through {workers}; not a value of the run (every count must give
// the same batches).
TEST_F(TrainerConfig, WorkerCountsArePassedThroughTheirPlaceholder) {
  nlohmann::json t = trainer();
  t["workers"] = {2, 0};
  t["command"].push_back("--num-workers");
  t["command"].push_back("{workers}");
  SmokeConfig c = load_smoke_config(write(t));
  EXPECT_EQ(c.trainer.workers, (std::vector<int>{2, 0}));
  t["workers"] = {2, 1};
  EXPECT_EQ(load_smoke_config(write(t)).values_hash, c.values_hash);
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](nlohmann::json& x) { x["workers"] = nlohmann::json::array(); },
       "trainer.workers: expected 1 to 8 DataLoader worker counts, e.g. [2, 0]"},
      {[](nlohmann::json& x) { x["workers"] = {2, 2}; },
       "trainer.workers[1]: expected a worker count not already in the list (2 is)"},
      {[](nlohmann::json& x) { x["workers"] = {65}; }, "trainer.workers[0]: expected an integer in [0, 64]"},
      {[](nlohmann::json& x) { x["command"] = {"python3", "train.py"}; },
       "trainer.workers: expected {workers} in command or data_only"},
      {[](nlohmann::json& x) { x.erase("probes"); x.erase("data_only"); },
       "trainer.workers: expected a \"probes\" file beside it"},
      {[](nlohmann::json& x) { x.erase("workers"); },
       "trainer.command[5]: expected {workers} only with a trainer.workers list"},
  };
  for (const auto& k : cases) {
    nlohmann::json x = t;
    x["workers"] = {2, 0};
    k.edit(x);
    std::string error = error_of(write(x));
    EXPECT_NE(error.find(k.message), std::string::npos) << error;
  }
}

// trainer.packages: names normalised as PEP 503, in one list only; it
// moves no value (it decides the lane).
TEST_F(TrainerConfig, PackagesAreNormalisedAndApplied) {
  nlohmann::json t = trainer();
  t["packages"] = {{"relevant", {"Scikit_Learn", "my.pkg"}}, {"informational", {"tqdm"}}};
  SmokeConfig c = load_smoke_config(write(t));
  EXPECT_EQ(c.trainer.packages_relevant, (std::vector<std::string>{"scikit-learn", "my-pkg"}));
  EXPECT_EQ(c.trainer.packages_informational, (std::vector<std::string>{"tqdm"}));
  EXPECT_EQ(c.values_hash, load_smoke_config(write(trainer())).values_hash);
  Fingerprint fp = {{"python.packages.tqdm", {"4.0", true, false}}, {"python.packages.my-pkg", {"1.0", false, false}}};
  apply_package_relevance(c.trainer, fp);
  EXPECT_FALSE(fp.at("python.packages.tqdm").relevant);
  EXPECT_TRUE(fp.at("python.packages.my-pkg").relevant);
  EXPECT_EQ(fp.at("python.packages.scikit-learn").value, "(absent: not installed)");
  EXPECT_TRUE(fp.at("python.packages.scikit-learn").relevant);
  t["packages"] = {{"relevant", {"tqdm"}}, {"informational", {"TQDM"}}};
  EXPECT_NE(error_of(write(t)).find("trainer.packages: expected a distribution in one list only; \"tqdm\" is both"),
            std::string::npos);
  t["packages"] = {{"relevant", {"../x"}}};
  EXPECT_NE(error_of(write(t)).find("trainer.packages.relevant[0]: expected a Python distribution name"),
            std::string::npos);
}

TEST_F(TrainerConfig, TheTimeoutIsNotAValue) {
  SmokeConfig a = load_smoke_config(write(trainer()));
  nlohmann::json t = trainer();
  t["timeout_s"] = 60;
  SmokeConfig b = load_smoke_config(write(t));
  EXPECT_EQ(a.values_hash, b.values_hash);
  t["command"][1] = "train2.py";
  EXPECT_NE(load_smoke_config(write(t)).values_hash, a.values_hash);
}

// The one rule for names that become folders and files under goldens/:
// a smoke's name, and the smoke and platform `compare RUN DIR` looks up.
TEST(GoldenName, PlainNamesOnly) {
  for (const char* ok : {"digits-cnn", "cpu-x86_64-avx2", "a.b_c-1", "X"}) EXPECT_TRUE(is_golden_name(ok)) << ok;
  for (const std::string& bad : std::vector<std::string>{"", ".", "..", ".hidden", "../x", "a/b", "a b", "caf\xc3\xa9", std::string(101, 'a')})
    EXPECT_FALSE(is_golden_name(bad)) << bad;
  EXPECT_TRUE(is_golden_name(std::string(100, 'a')));
}

}  // namespace
}  // namespace lockstep

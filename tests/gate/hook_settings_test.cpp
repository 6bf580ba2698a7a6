// What the pre-push hook checks and what triggers it (gate/hook_settings.h):
// the defaults, lockstep.json, a goldens folder the pushed commit deleted,
// and every malformed setting refused with exit 2.
#include "gate/hook_settings.h"

#include <gtest/gtest.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::GateProject;

std::string plan_error(const std::string& root) {
  try {
    hook_plan(root);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "hook_plan accepted " << root;
  return "";
}

TEST(HookPlan, DefaultsAreTheSmokesAndWhatTheyRead) {
  GateProject p("hook-defaults", [](nlohmann::json& c) { c["data"]["path"] = "../data/unit.csv"; });
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.smokes, std::vector<std::string>{"smoke"});
  // goldens/ is a folder trigger although no golden exists yet: its first
  // golden (or its deletion) must trigger the check.
  EXPECT_EQ(plan.triggers, (std::vector<std::string>{"data/unit.csv", "goldens/", "smoke/"}));
}

TEST(HookPlan, LockstepJsonAddsPathsAndNamesTheSmokes) {
  GateProject p("hook-settings");
  fs::create_directories(p.root() / "src");
  write_file_atomically((p.root() / "lockstep.json").string(),
                        R"({"schema": 1, "hook": {"smokes": ["smoke/unit.json"], "paths": ["src", "train.py", "."]}})");
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.smokes, std::vector<std::string>{"smoke/unit.json"});
  EXPECT_EQ(plan.triggers, std::vector<std::string>{"./"});  // "." is every file: nothing else is needed
  write_file_atomically((p.root() / "lockstep.json").string(), R"({"hook": {"paths": ["src", "train.py"]}})");
  EXPECT_EQ(hook_plan(p.root().string()).triggers,
            (std::vector<std::string>{"goldens/", "lockstep.json", "smoke/", "src/", "train.py"}));
}

// A glob in hook.paths triggers on its fixed folder (the hook matches
// paths, not patterns), as trainer.inputs does; a glob at the top is every file.
TEST(HookPlan, AGlobInPathsTriggersOnItsFixedFolder) {
  GateProject p("hook-glob");
  write_file_atomically((p.root() / "lockstep.json").string(),
                        R"({"hook": {"paths": ["src/models/*.py", "configs/**/x.yaml"]}})");
  EXPECT_EQ(hook_plan(p.root().string()).triggers,
            (std::vector<std::string>{"configs/", "goldens/", "lockstep.json", "smoke/", "src/models/"}));
  write_file_atomically((p.root() / "lockstep.json").string(), R"({"hook": {"paths": ["*.py"]}})");
  EXPECT_EQ(hook_plan(p.root().string()).triggers, std::vector<std::string>{"./"});
}

// A trainer run from the repository root may import any file in it: every
// change triggers the check ("./"), and the plan says why, once per smoke.
TEST(HookPlan, ATrainerAtTheRepositoryRootTriggersOnEveryFileAndSaysWhy) {
  GateProject p("hook-root-trainer", [](nlohmann::json& c) {
    c = {{"schema", 1}, {"name", "unit"}, {"device", "cpu"}, {"seed", 7}, {"steps", 2},
         {"trainer", {{"command", {"/usr/bin/python3", "train.py"}}, {"cwd", ".."},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
  });
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, std::vector<std::string>{"./"});
  EXPECT_EQ(plan.notes, std::vector<std::string>{
                            "smoke/unit.json: trainer.cwd is the repository root, so every changed file triggers the "
                            "check (its code may be anywhere there); a trainer in a folder of its own triggers on "
                            "that folder"});
  // In a folder of its own: that folder, and no note.
  fs::create_directories(p.root() / "trainer");
  nlohmann::json c = parse_json_file(p.smoke_file());
  c["trainer"]["cwd"] = "../trainer";
  write_file_atomically(p.smoke_file(), pretty_dump(c));
  plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, (std::vector<std::string>{"goldens/", "smoke/", "trainer/"}));
  EXPECT_TRUE(plan.notes.empty());
}

// trainer.inputs outside the trainer's folder trigger the check: a file by
// its path, a glob by its fixed folder (a deleted file still triggers),
// never a {data} file (the machine's cache).
TEST(HookPlan, TheTrainersInputFilesTriggerTheCheck) {
  GateProject p("hook-trainer-inputs", [](nlohmann::json& c) {
    c = {{"schema", 1}, {"name", "unit"}, {"device", "cpu"}, {"seed", 7}, {"steps", 2},
         {"trainer", {{"command", {"/usr/bin/python3", "train.py"}}, {"cwd", "../trainer"},
                      {"inputs", {"../datasets/shards/*.bin", "../datasets/vocab.json", "{config_dir}/extra.txt",
                                  "{data}/digits.csv.gz", "local/*.txt"}},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
  });
  fs::create_directories(p.root() / "trainer");
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, (std::vector<std::string>{"datasets/shards/", "datasets/vocab.json", "goldens/", "smoke/",
                                                     "trainer/"}));
  EXPECT_TRUE(plan.notes.empty());
}

// A trainer whose folder is around the repository reads every file in it
// (every change triggers); one outside it is never seen, and both say so.
TEST(HookPlan, ATrainerFolderAroundOrOutsideTheRepositoryIsNamedInANote) {
  GateProject p("hook-outside-trainer", [](nlohmann::json& c) {
    c = {{"schema", 1}, {"name", "unit"}, {"device", "cpu"}, {"seed", 7}, {"steps", 2},
         {"trainer", {{"command", {"/usr/bin/python3", "train.py"}}, {"cwd", "../.."},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
  });
  const std::string around = fs::weakly_canonical(p.root() / "..").string();
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, std::vector<std::string>{"./"});
  EXPECT_EQ(plan.notes, std::vector<std::string>{
                            "smoke/unit.json: trainer.cwd is a folder around the repository (" + around +
                            "), so every changed file triggers the check (its code may be anywhere there); a trainer "
                            "in a folder of its own triggers on that folder"});
  const fs::path elsewhere = p.root().parent_path() / (p.root().filename().string() + "-trainer");
  fs::create_directories(elsewhere);
  nlohmann::json c = parse_json_file(p.smoke_file());
  c["trainer"]["cwd"] = elsewhere.string();
  write_file_atomically(p.smoke_file(), pretty_dump(c));
  plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, (std::vector<std::string>{"goldens/", "smoke/"}));
  EXPECT_EQ(plan.notes, std::vector<std::string>{
                            "smoke/unit.json: trainer.cwd " + fs::weakly_canonical(elsewhere).string() +
                            " is outside the repository, so a change to the trainer's code there never triggers the "
                            "check; only the smoke's config, goldens and inputs inside the repository do"});
  fs::remove_all(elsewhere);
}

// A link inside the repository is a trigger of its own (git records it as
// a file: retargeting it changes only the link), beside its target; a
// folder whose name starts with ".." is inside the repository like any.
TEST(HookPlan, LinksAndDotDotNamesAreTriggers) {
  GateProject p("hook-links", [](nlohmann::json& c) {
    c = {{"schema", 1}, {"name", "unit"}, {"device", "cpu"}, {"seed", 7}, {"steps", 2},
         {"trainer", {{"command", {"/usr/bin/python3", "train.py"}}, {"cwd", "../..trainer"},
                      {"inputs", {"../data/link.bin", "../..data/*.bin"}},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
  });
  fs::create_directories(p.root() / "..trainer");
  fs::create_directories(p.root() / "data");
  fs::create_directories(p.root() / "store");
  write_file_atomically((p.root() / "store" / "v1.bin").string(), "1");
  fs::create_symlink("../store/v1.bin", p.root() / "data" / "link.bin");
  HookPlan plan = hook_plan(p.root().string());
  EXPECT_EQ(plan.triggers, (std::vector<std::string>{"..data/", "..trainer/", "data/link.bin", "goldens/", "smoke/",
                                                     "store/v1.bin"}));
  EXPECT_TRUE(plan.notes.empty()) << ::testing::PrintToString(plan.notes);
}

// A path with a control character cannot travel in the hook's lines: the
// config and its field are named.
TEST(HookPlan, AControlCharacterInAPathIsRefusedNamingTheConfigsField) {
  GateProject p("hook-control", [](nlohmann::json& c) {
    c = {{"schema", 1}, {"name", "unit"}, {"device", "cpu"}, {"seed", 7}, {"steps", 2},
         {"trainer", {{"command", {"/usr/bin/python3", "train.py"}}, {"cwd", ".."},
                      {"inputs", {"data/a\x07" "b/*.bin"}},
                      {"metrics", {{"format", "jsonl"}, {"path", "{out}/m.jsonl"}, {"series", {{"loss", "loss"}, {"grad_norm", "grad_norm"}}}}}}}};
  });
  EXPECT_EQ(plan_error(p.root().string()),
            p.smoke_file() + ": trainer.inputs[0]: expected a path without control characters (the pre-push hook reads "
                             "its triggers line by line), got \"data/a\\x07b/*.bin\"");
}

TEST(HookPlan, MalformedSettingsAreBadInput) {
  GateProject p("hook-bad");
  std::string root = p.root().string();
  std::string settings = (p.root() / "lockstep.json").string();
  auto with = [&](const std::string& text) {
    write_file_atomically(settings, text);
    return plan_error(root);
  };
  EXPECT_EQ(with(R"({"hook": {"pathz": []}})"),
            settings + ": hook.pathz: expected a known field, not 'pathz' (did you mean 'paths'?)");
  EXPECT_NE(with(R"({"hook": {"paths": ["a\nsmokes\t/etc"]}})").find("hook.paths[0]: expected a path relative to"),
            std::string::npos);
  EXPECT_NE(with(R"({"hook": {"paths": ["/etc"]}})").find("hook.paths[0]: expected"), std::string::npos);
  EXPECT_NE(with(R"({"hook": {"paths": ["../x"]}})").find("hook.paths[0]: expected"), std::string::npos);
  EXPECT_NE(with(R"({"hook": {"smokes": []}})").find("hook.smokes: expected at least one"), std::string::npos);
  EXPECT_NE(with(R"({"hook": {"smokes": ["nope"]}})").find("hook.smokes[0]: expected an existing smoke file or folder"),
            std::string::npos);
  EXPECT_NE(with(R"({"hook": {"smokes": ["smoke", "smoke"]}})").find("hook.smokes[1]: expected each smoke file or "
                                                                      "folder once"),
            std::string::npos);
  // One config under two spellings, or a file inside a listed folder: the
  // check the hook runs would refuse it as given twice.
  for (const char* twice : {R"({"hook": {"smokes": ["smoke", "./smoke/"]}})",
                            R"({"hook": {"smokes": ["smoke", "smoke/unit.json"]}})",
                            R"({"hook": {"smokes": ["smoke/unit.json", "smoke"]}})"})
    EXPECT_NE(with(twice).find("hook.smokes[1]: expected each smoke file or folder once; "), std::string::npos)
        << with(twice);
  EXPECT_NE(with(R"({"hook": {"smokes": ["smoke", "./smoke/"]}})")
                .find("\"./smoke/\" names what \"smoke\" (hook.smokes[0]) names, or lies in it or around it"),
            std::string::npos)
      << with(R"({"hook": {"smokes": ["smoke", "./smoke/"]}})");
  EXPECT_NE(with(R"({"hook": {"smokes": ["."]}})").find("hook.smokes[0]: expected a smoke file or folder inside"),
            std::string::npos);
  fs::remove(settings);
  fs::create_symlink("/nonexistent-lockstep-settings", settings);
  EXPECT_EQ(plan_error(root), settings + ": expected a JSON file (it is a dangling link, a folder or not a regular file)");
  fs::remove(settings);
  // A data path with a line break would add lines to `hook plan`'s output.
  GateProject q("hook-newline", [](nlohmann::json& c) { c["data"]["path"] = "x\nsmokes\t/etc"; });
  EXPECT_NE(plan_error(q.root().string()).find("data.path: expected a path without control characters"),
            std::string::npos);
  try {
    hook_plan((p.root() / "missing").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
  }
}

}  // namespace
}  // namespace lockstep

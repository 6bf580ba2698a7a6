// `lockstep init` (cli/init_command.cpp): what it scaffolds, that the
// example runs as is, that it never overwrites and a second run changes
// nothing.
#include <gtest/gtest.h>

#include <map>

#include "cli/cli_helpers.h"

namespace lockstep::cli_test {
namespace {

fs::path fresh(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-init-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(InitCli, ScaffoldsARepositoryWhoseExampleBlessesAndChecks) {
  fs::path d = fresh("new");
  Result r = lockstep("init " + d.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("created smoke/example-mlp.json"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_directory(d / "goldens"));
  EXPECT_EQ(read_file((d / ".gitignore").string()), "lockstep-out/\nlockstep-import/\n.lockstep.lock\n.*.tmp.*\n.gitlab-ci-local/\nlockstep-history/\n__pycache__/\n.lockstep-venv/\n");
  EXPECT_EQ(read_file((d / "ci/templates/lockstep.gitlab-ci.yml").string()),
            read_file(kSourceDir + "/ci/templates/lockstep.gitlab-ci.yml"));
  EXPECT_NE(read_file((d / ".gitlab-ci.yml").string()).find("  - local: ci/templates/lockstep.gitlab-ci.yml\n"),
            std::string::npos);
  EXPECT_NE(r.output.find("no pre-push hook: " + d.string() + " is not the root of a git work tree"), std::string::npos)
      << r.output;
  // In a git work tree, init installs the hook too.
  fs::path g = fresh("git");
  ASSERT_EQ(shell("git init -q " + g.string()).code, 0);
  Result in_git = lockstep("init " + g.string());
  EXPECT_EQ(in_git.code, 0) << in_git.output;
  EXPECT_NE(in_git.output.find("installed " + (g / ".git/hooks/pre-push").string()), std::string::npos)
      << in_git.output;
  fs::remove_all(g);
  Result bless = lockstep("bless smoke/ --reason first", "", d.string());
  ASSERT_EQ(bless.code, 0) << bless.output;
  Result check = lockstep("check smoke/", "", d.string());
  EXPECT_EQ(check.code, 0) << check.output;
  // Run again in the gated repository, init's next step is check, not a first bless.
  Result again = lockstep("init " + d.string());
  EXPECT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("next: commit these files, then `lockstep check smoke/` (goldens/ has goldens; a smoke "
                              "without one: `lockstep bless smoke/<name>.json --reason ...`, then commit goldens/)"),
            std::string::npos)
      << again.output;
  fs::remove_all(d);
}

// What the repository will gate decides the example and the CI jobs:
// trainer smokes only switch off the jobs in lockstep's own image and name
// the trainer's image and the wheel; built-in ones name lockstep's image.
TEST(InitCli, TheKindOfSmokesDecidesTheExampleAndTheJobs) {
  fs::path d = fresh("trainer");
  Result r = lockstep("init --kind trainer " + d.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::is_directory(d / "smoke"));
  EXPECT_TRUE(fs::is_empty(d / "smoke"));
  EXPECT_NE(r.output.find("created smoke/, empty: --kind trainer; write smoke/<name>.json with a trainer section"),
            std::string::npos) << r.output;
  const std::string ci = read_file((d / ".gitlab-ci.yml").string());
  EXPECT_NE(ci.find("  LOCKSTEP_TRAINER_IMAGE: \"\"\n  LOCKSTEP_WHEEL: \"lockstep==" LOCKSTEP_VERSION "\"\n"),
            std::string::npos) << ci;
  EXPECT_EQ(ci.find("LOCKSTEP_IMAGE:"), std::string::npos) << ci;
  EXPECT_NE(ci.find("lockstep-check:\n  rules: [{when: never}]\nlockstep-nightly:\n  rules: [{when: never}]\n"
                    "lockstep-bless:\n  rules: [{when: never}]\nlockstep-gpu:\n  rules: [{when: never}]\n"),
            std::string::npos) << ci;
  EXPECT_NE(r.output.find("trainer smokes: set LOCKSTEP_TRAINER_IMAGE, your trainer's image with python3 and torch"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("next: write smoke/<name>.json for your trainer (docs/trainers.md), commit these files"),
            std::string::npos) << r.output;
  fs::remove_all(d);

  Result built_in = lockstep("init --kind built-in " + d.string());
  ASSERT_EQ(built_in.code, 0) << built_in.output;
  EXPECT_TRUE(fs::exists(d / "smoke" / "example-mlp.json"));
  const std::string ci2 = read_file((d / ".gitlab-ci.yml").string());
  EXPECT_NE(ci2.find("  LOCKSTEP_IMAGE: \"lockstep:cpu\"\n"), std::string::npos) << ci2;
  EXPECT_EQ(ci2.find("LOCKSTEP_TRAINER_IMAGE"), std::string::npos) << ci2;
  EXPECT_EQ(ci2.find("when: never"), std::string::npos) << ci2;
  fs::remove_all(d);

  // Here lockstep-torch is beside lockstep: both, by default.
  Result both = lockstep("init " + d.string());
  ASSERT_EQ(both.code, 0) << both.output;
  const std::string ci3 = read_file((d / ".gitlab-ci.yml").string());
  EXPECT_NE(ci3.find("LOCKSTEP_IMAGE: \"lockstep:cpu\""), std::string::npos) << ci3;
  EXPECT_NE(ci3.find("LOCKSTEP_TRAINER_IMAGE: \"\""), std::string::npos) << ci3;
  EXPECT_EQ(ci3.find("when: never"), std::string::npos) << ci3;
  Result bad = lockstep("init --kind gpu " + d.string());
  EXPECT_EQ(bad.code, 2) << bad.output;
  fs::remove_all(d);
}

TEST(InitCli, NeverOverwritesAndASecondRunChangesNothing) {
  fs::path d = fresh("existing");
  fs::create_directories(d / "smoke");
  write_file_atomically((d / "smoke" / "ours.json").string(), "{}");
  write_file_atomically((d / ".gitignore").string(), "*.pyc\nlockstep-out/");  // no final newline
  write_file_atomically((d / ".gitlab-ci.yml").string(), "stages: [test]\n");
  Result r = lockstep("init " + d.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("kept smoke/ (it has smoke configs)"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d / "smoke" / "example-mlp.json"));
  EXPECT_EQ(read_file((d / "smoke" / "ours.json").string()), "{}");
  // Entries it lacks are appended; the team's own lines stay as they are.
  EXPECT_EQ(read_file((d / ".gitignore").string()), "*.pyc\nlockstep-out/\nlockstep-import/\n.lockstep.lock\n.*.tmp.*\n.gitlab-ci-local/\nlockstep-history/\n__pycache__/\n.lockstep-venv/\n");
  EXPECT_EQ(read_file((d / ".gitlab-ci.yml").string()), "stages: [test]\n");
  EXPECT_NE(r.output.find("kept .gitlab-ci.yml; add to it:\n  include:\n    - local: ci/templates/lockstep.gitlab-ci.yml"),
            std::string::npos)
      << r.output;

  std::map<std::string, std::string> before;
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (e.is_regular_file()) before[e.path().string()] = read_file(e.path().string());
  Result again = lockstep("init " + d.string());
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(again.output.find("created"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("updated"), std::string::npos) << again.output;
  std::map<std::string, std::string> after;
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (e.is_regular_file()) after[e.path().string()] = read_file(e.path().string());
  EXPECT_EQ(before, after);

  write_file_atomically((d / "afile").string(), "x");
  Result file = lockstep("init " + (d / "afile").string());
  EXPECT_EQ(file.code, 2) << file.output;
  EXPECT_NE(file.output.find("afile: not a folder"), std::string::npos) << file.output;
  fs::remove_all(d);
}

}  // namespace
}  // namespace lockstep::cli_test

// bisect-env in-process: environment files read strictly, their
// differences, a set of them applied to a run, Zeller's ddmin finding one
// culprit or a pair that only acts together, and the search over a fake
// launcher whose records move with an environment variable.
#include "bisect/bisect_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/atomic_file.h"
#include "gate/gate_fixture.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::FakeLauncher;
using testing::GateProject;

std::string write(const GateProject& p, const std::string& name, const std::string& text) {
  std::string path = (p.root() / name).string();
  write_file_atomically(path, text);
  return path;
}

TEST(BisectEnv, DdminFindsOneCulpritInFewTests) {
  std::vector<std::vector<size_t>> asked;
  std::vector<size_t> found = ddmin(4, [&](const std::vector<size_t>& s) {
    asked.push_back(s);
    return std::find(s.begin(), s.end(), 2) != s.end();
  });
  EXPECT_EQ(found, (std::vector<size_t>{2}));
  EXPECT_LE(asked.size(), 4u);
}

TEST(BisectEnv, DdminFindsAPairThatOnlyActsTogether) {
  std::vector<size_t> found = ddmin(4, [](const std::vector<size_t>& s) {
    return std::find(s.begin(), s.end(), 0) != s.end() && std::find(s.begin(), s.end(), 3) != s.end();
  });
  EXPECT_EQ(found, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(ddmin(1, [](const std::vector<size_t>&) { return true; }), (std::vector<size_t>{0}));
}

TEST(BisectEnv, DifferencesAreVariablesFoldersAndTheInterpreter) {
  GateProject p("env-diff");
  StackEnv good = read_stack_env(write(p, "good.json", R"({"env": {"A": "1", "B": "x", "C": "same"},
      "library_path": ["/opt/a/lib"], "python_path": ["/opt/a/site"], "python": "/usr/bin/python3"})"));
  StackEnv bad = read_stack_env(write(p, "bad.json", R"({"env": {"A": "2", "C": "same", "D": "new"},
      "library_path": ["/opt/b/lib", "/opt/a/lib"], "python_path": [], "python": "/opt/b/bin/python3"})"));
  std::vector<EnvDifference> d = env_differences(good, bad);
  std::vector<std::string> labels;
  for (const auto& x : d) labels.push_back(x.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"A=2", "B as inherited", "D=new", "library folder /opt/b/lib",
                                              "without Python folder /opt/a/site", "interpreter /opt/b/bin/python3"}));
  ChildRun base;
  base.smoke = "smoke/x.json";
  ChildRun none = apply_differences(base, good, d, {});
  EXPECT_NE(std::find(none.env.begin(), none.env.end(), "A=1"), none.env.end());
  EXPECT_NE(std::find(none.env.begin(), none.env.end(), "B=x"), none.env.end());
  EXPECT_EQ(none.python, "/usr/bin/python3");
  ChildRun some = apply_differences(base, good, d, {0, 1, 3, 4, 5});
  EXPECT_NE(std::find(some.env.begin(), some.env.end(), "A=2"), some.env.end());
  EXPECT_EQ(std::count_if(some.env.begin(), some.env.end(), [](const std::string& e) { return e.rfind("B=", 0) == 0; }), 0);
  auto lib = std::find_if(some.env.begin(), some.env.end(), [](const std::string& e) { return e.rfind("LD_LIBRARY_PATH=", 0) == 0; });
  ASSERT_NE(lib, some.env.end());
  EXPECT_EQ(lib->rfind("LD_LIBRARY_PATH=/opt/b/lib:/opt/a/lib", 0), 0u) << *lib;
  EXPECT_EQ(std::count_if(some.env.begin(), some.env.end(), [](const std::string& e) { return e.rfind("PYTHONPATH=", 0) == 0; }), 0);
  EXPECT_EQ(some.python, "/opt/b/bin/python3");
}

TEST(BisectEnv, MalformedEnvironmentFilesAreRefusedNamingTheField) {
  GateProject p("env-bad");
  auto message = [&](const std::string& text) {
    try {
      read_stack_env(write(p, "e.json", text));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  std::string f = (p.root() / "e.json").string();
  EXPECT_NE(message(R"({"envs": {}})").find("envs"), std::string::npos);
  EXPECT_NE(message(R"({"env": {"A": 1}})").find(f), std::string::npos);
  EXPECT_NE(message(R"({"env": {"PYTHONPATH": "/x"}})").find("list its folders in \"python_path\""), std::string::npos);
  EXPECT_NE(message(R"({"library_path": ["lib"]})").find("an absolute folder path"), std::string::npos);
  EXPECT_NE(message(R"({"library_path": ["/a:/b"]})").find("one folder"), std::string::npos);
  EXPECT_NE(message(R"({"python_path": ["/a", "/a"]})").find("a folder listed once"), std::string::npos);
  EXPECT_NE(message(R"({"env": {)").find(f), std::string::npos);
}

TEST(BisectEnv, TheSettableDifferencesOfAnEnvDiffBecomeTwoFiles) {
  std::vector<FieldDiff> diffs = {{"env.ATEN_CPU_CAPABILITY", "(unset)", "default", true, false},
                                  {"trainer.env.SHIFT", "0", "1", true, false},
                                  {"env.OMP_NUM_THREADS", "(set, empty)", "2", false, false},
                                  {"python.executable", "/usr/bin/python3", "/opt/b/bin/python3", false, false},
                                  {"trainer.env.PYTHONPATH", "/a", "/b", false, false},
                                  {"torch.version", "1.13.0", "2.4.0", true, false}};
  StackEnv record, here;
  std::vector<std::string> left_out;
  EXPECT_EQ(settable_differences(diffs, record, here, left_out), 4u);
  EXPECT_EQ(record.env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", ""}, {"SHIFT", "0"}}));
  EXPECT_EQ(here.env, (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "default"}, {"OMP_NUM_THREADS", "2"}, {"SHIFT", "1"}}));
  EXPECT_EQ(record.python, "/usr/bin/python3");
  EXPECT_EQ(here.python, "/opt/b/bin/python3");
  EXPECT_EQ(left_out, (std::vector<std::string>{"trainer.env.PYTHONPATH", "torch.version"}));
  GateProject p("env-write");
  std::string path = (p.root() / "here.json").string();
  write_stack_env(path, here);
  StackEnv back = read_stack_env(path);
  EXPECT_EQ(back.env, here.env);
  EXPECT_EQ(back.python, here.python);
}

TEST(BisectEnv, TheSearchNamesTheVariableThatMovesTheCurve) {
  GateProject p("env-search");
  std::string good = write(p, "good.json", R"({"env": {"SHIFT": "0", "LANG": "C", "FOO": "1"}})");
  std::string bad = write(p, "bad.json", R"({"env": {"SHIFT": "1", "LANG": "en_US.UTF-8", "BAR": "2"}})");
  FakeLauncher l;
  l.edit = [](size_t, const ChildRun& run, RunRecord& r) {
    if (std::find(run.env.begin(), run.env.end(), "SHIFT=1") != run.env.end())
      r.series["loss"].values[1] = static_cast<float>(2.3);
  };
  EnvBisectOptions o;
  o.good_env = good;
  o.bad_env = bad;
  o.smokes = {p.smoke_file()};
  o.out_dir = p.out_dir();
  EnvBisectResult r = bisect_env(o, l);
  EXPECT_EQ(r.code, ExitCode::kRegression) << r.message;
  EXPECT_EQ(r.message, "the curve moves with {SHIFT=1} alone");
  EXPECT_EQ(r.differences.size(), 4u);
  EXPECT_LE(r.runs, 2 * 4 * 2);  // 2 x differences x log2(differences)
  EXPECT_NE(r.divergence.find("loss"), std::string::npos) << r.divergence;
  EXPECT_EQ(l.calls[0].out, p.out_dir() + "/bisect-env/set-1/unit-1.json");
}

TEST(BisectEnv, TwoConfigsOfOneSmokeAreRefused) {
  GateProject p("env-names");
  std::string copy = (p.root() / "smoke" / "copy.json").string();
  fs::copy_file(p.smoke_file(), copy);
  FakeLauncher l;
  EnvBisectOptions o;
  o.good_env = write(p, "good.json", R"({"env": {"A": "1"}})");
  o.bad_env = write(p, "bad.json", R"({"env": {"A": "2"}})");
  o.smokes = {p.smoke_file(), copy};
  o.out_dir = p.out_dir();
  try {
    bisect_env(o, l);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("are both smoke 'unit'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(l.calls.empty());
}

TEST(BisectEnv, NothingToSearchWhenTheBadStackPasses) {
  GateProject p("env-pass");
  FakeLauncher l;
  EnvBisectOptions o;
  o.good_env = write(p, "good.json", R"({"env": {"A": "1"}})");
  o.bad_env = write(p, "bad.json", R"({"env": {"A": "2"}})");
  o.smokes = {p.smoke_file()};
  o.out_dir = p.out_dir();
  EnvBisectResult r = bisect_env(o, l);
  EXPECT_EQ(r.code, ExitCode::kBadInput);
  EXPECT_EQ(r.message.rfind("nothing to search: with every difference of ", 0), 0u) << r.message;
  o.bad_env = o.good_env;
  EXPECT_EQ(bisect_env(o, l).message, "nothing to search: " + o.good_env + " and " + o.good_env + " set the same");
  // A built-in smoke has no interpreter to set.
  o.bad_env = write(p, "py.json", R"({"python": "/usr/bin/python3"})");
  EXPECT_THROW(bisect_env(o, l), Error);
}

}  // namespace
}  // namespace lockstep

// `lockstep --help` groups the commands by what they are for, as git's help
// does, and lockstep(1) (ci/make-man.sh, from the same help) documents
// every leaf command: the two never drift apart.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_helpers.h"
#include "plan/run_plan.h"
#include "test_paths.h"

namespace lockstep::cli_test {
namespace {

// The "Heading:" sections of a help text other than Options and
// Positionals, each with the command names it lists, in order.
std::vector<std::pair<std::string, std::vector<std::string>>> command_groups(const std::string& help) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::istringstream in(help);
  std::string line;
  bool on = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ' && line.back() == ':' && line.find(' ') != 0) {
      on = line != "Options:" && line != "Positionals:" && line.rfind("Usage", 0) != 0;
      if (on) out.push_back({line.substr(0, line.size() - 1), {}});
      continue;
    }
    if (!line.empty() && line[0] != ' ') on = false;
    if (on && line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] >= 'a' && line[2] <= 'z')
      out.back().second.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return out;
}

TEST(Help, CommandsAreGroupedAndTheManPageDocumentsEveryLeaf) {
  Result top = lockstep("--help");
  ASSERT_EQ(top.code, 0) << top.output;
  auto groups = command_groups(top.output);
  using Group = std::pair<std::string, std::vector<std::string>>;
  EXPECT_EQ(groups, (std::vector<Group>{
                        {"Gate a change", {"check", "selftest", "bless", "review", "accept", "verify-goldens"}},
                        {"Investigate", {"calibrate", "bisect", "bisect-env", "compare", "env", "history"}},
                        {"Produce records", {"run", "probe", "import"}},
                        {"Set up", {"init", "hook"}}}))
      << top.output;

  const std::string man =
      read_file((std::filesystem::path(test_paths::lockstep_binary()).parent_path() / "lockstep.1").string());
  std::vector<std::string> leaves;
  for (const auto& [group, commands] : groups)
    for (const std::string& c : commands) {
      EXPECT_NE(man.find(".SS lockstep " + c + "\n"), std::string::npos) << c;
      Result help = lockstep(c + " --help");
      EXPECT_EQ(help.code, 0) << help.output;
      auto subs = command_groups(help.output);
      if (subs.empty() || c == "history") leaves.push_back(c);  // history reads the ledgers itself
      for (const auto& [heading, names] : subs)
        for (const std::string& s : names) {
          leaves.push_back(c + " " + s);
          EXPECT_NE(man.find("Usage: lockstep " + c + " " + s), std::string::npos) << c << " " << s << " in\n" << man;
        }
    }
  EXPECT_EQ(leaves.size(), 22u) << ::testing::PrintToString(leaves);
}

// Every flag any leaf's --help shows is a row of the vocabulary table in
// docs/architecture.md ("One flag vocabulary"), and the old spellings stay
// hidden from --help.
TEST(Help, EveryFlagIsInTheVocabularyTable) {
  const std::string doc = read_file(kSourceDir + "/docs/architecture.md");
  const size_t from = doc.find("## One flag vocabulary");
  ASSERT_NE(from, std::string::npos);
  const std::string table = doc.substr(from, doc.find("\n## ", from + 1) - from);
  const std::vector<std::string> leaves = {"check", "bless", "review", "accept", "verify-goldens", "compare", "bisect",
                                           "bisect-env", "calibrate", "history", "env", "run", "probe", "import",
                                           "init", "hook install", "hook uninstall", "hook plan", "history add",
                                           "history push", "history pull"};
  size_t flags = 0;
  for (const std::string& leaf : leaves) {
    Result help = lockstep(leaf + " --help");
    ASSERT_EQ(help.code, 0) << help.output;
    std::istringstream in(help.output);
    std::string line;
    while (std::getline(in, line)) {
      // An option line: "  -j,--jobs INT ..." or "  --out TEXT=lockstep-out ...".
      size_t at = line.find_first_not_of(' ');
      if (at == std::string::npos || at == 0 || line[at] != '-') continue;
      std::istringstream names(line.substr(at, line.find(' ', at) - at));
      for (std::string flag; std::getline(names, flag, ',');) {
        if (flag.rfind("--", 0) != 0) continue;
        ++flags;
        EXPECT_NE(table.find("`" + flag + "`"), std::string::npos) << leaf << ": " << flag << " is not in the table";
      }
    }
    for (const char* old : {"--runs", "--repeats"})
      EXPECT_EQ(help.output.find(std::string(old) + " "), std::string::npos) << leaf << " shows " << old;
  }
  EXPECT_GT(flags, 80u);
}

// An old spelling keeps working and says once which flag replaced it; one
// whose meaning changed (calibrate --seeds K, a count) is refused, never
// read the new way.
// A child run is a RunRequest written back as a command line
// (run_request_args, plan/run_plan.h): every field's flag, set away from
// its default, must parse as `run` and `probe` declare it. A smoke that
// does not exist shows the command line was accepted: the refusal is the
// file's, after parsing, not CLI11's.
TEST(Help, EveryRunRequestFieldWrittenAsFlagsParsesBack) {
  auto base = [] {
    RunRequest r;
    r.smoke = "/nonexistent/smoke.json";
    r.out = "/nonexistent/run.json";
    r.quiet = true;
    return r;
  };
  std::vector<std::pair<RunRequest, bool>> requests;
  RunRequest all = base();
  all.overrides = {2, 1, 2, 1.5, "parameter", "default", {}};
  all.repeat = 3;
  all.data_pass = false;
  all.variant = "accum2";
  all.then_variants = {"split2", "workers0"};
  requests.push_back({all, true});
  RunRequest stop = base();
  stop.stop_after = 3;
  stop.checkpoint = "/nonexistent/c.ckpt";
  requests.push_back({stop, true});
  RunRequest resume = base();
  resume.resume = "/nonexistent/c.ckpt";
  resume.skip_generator_restore = true;
  requests.push_back({resume, true});
  RunRequest rank = base();
  rank.rank = 1;
  rank.rendezvous = "/nonexistent/r";
  rank.nnodes = 2;
  rank.node_rank = 1;
  rank.master = "host:29500";
  requests.push_back({rank, true});
  requests.push_back({rank, false});
  for (const auto& [r, train] : requests) {
    std::string line;
    for (const auto& a : run_request_args(r, train)) line += (line.empty() ? "" : " ") + a;
    Result out = lockstep(line);
    EXPECT_EQ(out.code, 2) << line << "\n" << out.output;
    EXPECT_NE(out.output.find("/nonexistent/smoke.json: cannot read"), std::string::npos) << line << "\n" << out.output;
  }
  EXPECT_EQ(run_request_args(all, true),
            (std::vector<std::string>{"run", "/nonexistent/smoke.json", "--variant", "accum2", "--then-variant", "split2",
                                      "--then-variant", "workers0", "--record", "/nonexistent/run.json", "--quiet",
                                      "--intra-op-threads", "2", "--workers", "1", "--world-size", "2", "--lr-scale",
                                      "1.5", "--perturb", "parameter", "--determinism", "default", "--repeat", "3",
                                      "--no-data-pass"}));
}

// A value given as "" is refused by the flag's name, by every command (an
// unset variable in a CI script is a mistake, never the default); so is a
// bad value of a flag --help leaves out, which still names it.
TEST(Help, EmptyValuesAndHiddenFlagsAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"check " + kSmoke + " --goldens ''", "--goldens: expected a value, got an empty string"},
      {"check " + kSmoke + " --history ''", "--history: expected a value, got an empty string"},
      {"run " + kSmoke + " --resume ''", "--resume: expected a value, got an empty string"},
      {"run " + kSmoke + " --stop-after 3 --checkpoint ''", "--checkpoint: expected a value, got an empty string"},
      {"calibrate ''", "SMOKE: expected a value, got an empty string"},
      {"init ''", "DIR: expected a value, got an empty string"},
      {"env --diff ''", "--diff: expected a value, got an empty string"},
      {"run " + kSmoke + " --out ''", "--out: a file path for the record, not empty"},
      {"run " + kSmoke + " --rank 64", "--rank: expected a decimal integer in [0 - 63], got 64"},
      {"run " + kSmoke + " --skip-generator-restore", "--skip-generator-restore requires --resume"},
      {"bless " + kSmoke + " --reason x --runs 1", "--runs: expected a decimal integer in [2 - 100], got 1"},
      {"run " + kSmoke + " --stop-after 3 --checkpoint c.ckpt --lr-scale 2", "--lr-scale excludes --stop-after"},
      {"import jsonl m.jsonl --series loss --golden " + kSmoke + " --step-offset 0x2",
       "--step-offset: expected a decimal integer in [-1000000 - 1000000], got '0x2'"},
  };
  for (const auto& [line, message] : cases) {
    Result r = lockstep(line);
    EXPECT_EQ(r.code, 2) << line << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << line << "\n" << r.output;
  }
}

// A mistyped command or flag is exit 2 and one line: the word and its
// closest spelling, in place of CLI11's "not expected" list, also when the
// typo left a required option missing or fed its value to a positional.
TEST(Help, AMistypedCommandOrFlagIsNamedWithItsClosestSpelling) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"chek " + kSmoke, "unknown command 'chek' (did you mean 'check'?); `lockstep --help` lists the commands"},
      {"hook plna", "unknown command 'plna' of `lockstep hook` (did you mean 'plan'?); `lockstep hook --help` lists "
                    "its commands"},
      {"history ad x.json --to dir", "unknown command 'ad' of `lockstep history` (did you mean 'add'?); `lockstep "
                                     "history --help` lists its commands"},
      {"run --varaint workers0 " + kSmoke, "--varaint is not a flag of `lockstep run` (did you mean --variant?); "
                                           "`lockstep run --help` lists its flags"},
      {"run -varaint workers0 " + kSmoke, "-varaint is not a flag of `lockstep run` (did you mean --variant?); "
                                          "`lockstep run --help` lists its flags"},
      {"probe --repeat 2 " + kSmoke, "--repeat is not a flag of `lockstep probe`; `lockstep probe --help` lists its "
                                     "flags"},
      {"history add x.json --too dir", "--too is not a flag of `lockstep history add` (did you mean --to?); "
                                       "`lockstep history add --help` lists its flags"},
      {"import jsonl m.jsonl --seires loss=loss --record x.json",
       "--seires is not a flag of `lockstep import` (did you mean --series?); `lockstep import --help` lists its "
       "flags"},
      {"--verison", "--verison is not a flag of `lockstep` (did you mean --version?); `lockstep --help` lists its "
                    "flags"},
      // Not misspellings, said in lockstep's words.
      {"run -- " + kSmoke + " extra more", "`lockstep run` does not take 'extra', 'more'; `lockstep run --help` "
                                           "lists what it takes"},
      {"run --record= " + kSmoke, "--record=: expected a value after '='"},
      {"env --format json --format text", "--format given 2 times; give it once (`lockstep env --help`)"},
  };
  for (const auto& [line, message] : cases) {
    Result r = lockstep(line);
    EXPECT_EQ(r.code, 2) << line << "\n" << r.output;
    EXPECT_EQ(r.output, "lockstep: error: " + message + "\n") << line;
  }
}

TEST(Help, OldSpellingsStillWorkAndSayWhatReplacedThem) {
  const std::string dir = own_working_dir();
  Result folder = lockstep("run " + kSmoke + " --out " + dir + "/x/");
  EXPECT_EQ(folder.code, 2) << folder.output;
  EXPECT_NE(folder.output.find("lockstep: note: --out is deprecated; use --record FILE (the same meaning)\n"),
            std::string::npos) << folder.output;
  EXPECT_NE(folder.output.find("--record " + dir + "/x/: a file path for the record, not a folder"), std::string::npos)
      << folder.output;
  // Said once, although the front hands the command to lockstep-torch.
  EXPECT_EQ(folder.output.find("deprecated", folder.output.find("deprecated") + 1), std::string::npos)
      << folder.output;
  Result env = lockstep("env --json");
  EXPECT_EQ(env.code, 0) << env.output;
  EXPECT_EQ(env.output.rfind("lockstep: note: env --json without a file is deprecated; use --format json\n{", 0), 0u)
      << env.output;
  // The old switch beside --format: the same choice passes, another is refused.
  Result env_same = lockstep("env --json --format json");
  EXPECT_EQ(env_same.code, 0) << env_same.output;
  EXPECT_EQ(env_same.output.rfind("lockstep: note: env --json without a file is deprecated; use --format json\n{", 0), 0u)
      << env_same.output;
  Result env_other = lockstep("env --json --format text");
  EXPECT_EQ(env_other.code, 2) << env_other.output;
  EXPECT_EQ(env_other.output, "lockstep: error: env: --json without a file is the old spelling of --format json, and "
                              "--format text was given too; give --format only\n");
  // With its replacement: which one counts would be a guess.
  Result both = lockstep("run " + kSmoke + " --out a.json --record b.json");
  EXPECT_EQ(both.code, 2) << both.output;
  EXPECT_NE(both.output.find("lockstep: error: --out and --record name one thing (--out is its old spelling); give "
                             "--record only"),
            std::string::npos) << both.output;
  // Twice: refused by name, the note said once.
  Result twice = lockstep("run " + kSmoke + " --out a.json --out b.json");
  EXPECT_EQ(twice.code, 2) << twice.output;
  EXPECT_EQ(twice.output, "lockstep: note: --out is deprecated; use --record FILE (the same meaning)\n"
                          "lockstep: error: --out given 2 times; give --record once\n");
  Result trailing = lockstep("calibrate " + kSmoke + " --seeds 3, --out " + dir + "/cal");
  EXPECT_EQ(trailing.code, 2) << trailing.output;
  EXPECT_NE(trailing.output.find("lockstep: error: calibrate --seeds 3,: seed 2 is empty; expected unsigned integers "
                                 "separated by commas (e.g. --seeds 7,8,9)"),
            std::string::npos) << trailing.output;
  Result count = lockstep("calibrate " + kSmoke + " --seeds 3 --out " + dir + "/cal");
  EXPECT_EQ(count.code, 2) << count.output;
  EXPECT_NE(count.output.find("calibrate --seeds 3: a list of at least two seeds, as bless --seeds takes (e.g. "
                              "--seeds 7,8,9); for K seeds from the config's, --seed-count K"),
            std::string::npos) << count.output;
}

}  // namespace
}  // namespace lockstep::cli_test

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
                        {"Gate a change", {"check", "bless", "review", "accept", "verify-goldens"}},
                        {"Investigate", {"calibrate", "bisect", "bisect-env", "compare", "env", "history"}},
                        {"Produce records", {"run", "probe", "import"}},
                        {"Set up", {"init", "hook"}}}))
      << top.output;

  const std::string man =
      read_file((std::filesystem::path(LOCKSTEP_BINARY).parent_path() / "lockstep.1").string());
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
  EXPECT_EQ(leaves.size(), 21u) << ::testing::PrintToString(leaves);
}

}  // namespace
}  // namespace lockstep::cli_test

#include "ingest/digests_jsonl.h"

#include <gtest/gtest.h>

#include <string>

#include "ingest/ingest_test_util.h"

namespace lockstep {
namespace {

const std::string kA(32, 'a'), kB(32, 'b');

std::string line(int64_t step, const std::string& params = kA, const std::string& grads = kB) {
  return nlohmann::json{{"step", step}, {"params", params}, {"grads", grads}}.dump() + "\n";
}

class DigestsJsonl : public ::testing::Test {
 protected:
  IngestTempDir dir_{"digests"};
  std::string file_ = dir_.path("lockstep-digests.jsonl");
  std::string error(const std::string& text, int64_t steps = 10, int64_t first = 0) {
    write_bytes(file_, text);
    return exit2_message([&] { read_digests_jsonl(file_, steps, first); });
  }
};

TEST_F(DigestsJsonl, ReadsOneLinePerStepWithItsStep) {
  write_bytes(file_, line(0) + "\n" + line(1, kB, kA) + line(3));
  StepDigests d = read_digests_jsonl(file_, 10);
  EXPECT_EQ(d.steps, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(d.params, (std::vector<std::string>{kA, kB, kA}));
  EXPECT_EQ(d.grads, (std::vector<std::string>{kB, kA, kB}));
  // A resumed run writes from its first step.
  write_bytes(file_, line(5) + line(6));
  EXPECT_EQ(read_digests_jsonl(file_, 10, 5).steps, (std::vector<int64_t>{5, 6}));
}

TEST_F(DigestsJsonl, BadLinesAreExitTwoNamingTheLineAndField) {
  EXPECT_EQ(error(line(0) + line(0)), file_ + ": line 2: step: expected steps in increasing order (after 0), got 0");
  EXPECT_EQ(error(line(0) + line(1, "xyz")),
            file_ + ": line 2: params: expected an XXH3-128 digest (32 lowercase hex digits), got \"xyz\"");
  EXPECT_EQ(error(line(10)), file_ + ": line 1: step: expected an integer in [0, 9], got 10");
  EXPECT_EQ(error(line(4), 10, 5), file_ + ": line 1: step: expected an integer in [5, 9], got 4");
  EXPECT_NE(error("{\"step\": 0, \"params\": \"" + kA + "\"}\n").find(file_ + ": line 1: grads: expected"),
            std::string::npos);
  EXPECT_NE(error("{\"step\": 0,\n").find(file_ + ": line 1"), std::string::npos);
  EXPECT_EQ(error("\n\n"), file_ + ": expected at least one line of digests (the file holds only blank lines)");
}

}  // namespace
}  // namespace lockstep

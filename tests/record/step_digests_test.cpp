#include "record/step_digests.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {

const std::string kA(32, 'a'), kB(32, 'b'), kC(32, 'c');

std::string error_of(const nlohmann::json& j, int64_t steps) {
  try {
    step_digests_from_json(JsonView(j, "run.json", "digests"), steps);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

// The definition both trainers share: the XXH3-128 of "<name> <digest>\n"
// lines (the expected value is Python's xxhash of the same text).
TEST(StepDigests, AManifestIsTheXxh3OfItsLines) {
  EXPECT_EQ(manifest_digest({{"fc.weight", "000102030405060708090a0b0c0d0e0f"}, {"fc.bias", "none"}}),
            "044ea6ca1183910f8dc85ab1198c93d9");
}

TEST(StepDigests, RoundTripThroughJsonWithAndWithoutSteps) {
  nlohmann::json dense = {{"params", {kA, kB}}, {"grads", {kB, kC}}};
  StepDigests d = step_digests_from_json(JsonView(dense, "run.json", "digests"), 2);
  EXPECT_TRUE(d.steps.empty());
  EXPECT_EQ(d.step_of(1), 1);
  EXPECT_EQ(to_json(d), dense);
  nlohmann::json some = {{"params", {kA, kB}}, {"grads", {kB, kC}}, {"steps", {3, 7}}};
  StepDigests s = step_digests_from_json(JsonView(some, "run.json", "digests"), 10);
  EXPECT_EQ(s.step_of(1), 7);
  EXPECT_EQ(to_json(s), some);
}

TEST(StepDigests, MalformedDigestsAreExitTwoNamingTheField) {
  EXPECT_EQ(error_of({{"params", {kA, "ABC"}}, {"grads", {kA, kA}}}, 2),
            "run.json: digests.params[1]: expected an XXH3-128 digest (32 lowercase hex digits), got \"ABC\"");
  EXPECT_EQ(error_of({{"params", {kA, kA}}, {"grads", {kA}}}, 2),
            "run.json: digests.grads: expected one digest per entry of params (2), got 1");
  EXPECT_EQ(error_of({{"params", {kA}}, {"grads", {kA}}}, 2),
            "run.json: digests.params: expected one digest per step (2, the record's steps), got 1 (give \"steps\" "
            "for digests of some steps only)");
  EXPECT_EQ(error_of({{"params", {kA, kA}}, {"grads", {kA, kA}}, {"steps", {4, 4}}}, 10),
            "run.json: digests.steps[1]: expected steps in increasing order (after 4), got 4");
  EXPECT_NE(error_of({{"params", {kA}}, {"grads", {kA}}, {"steps", {10}}}, 10).find("digests.steps[0]"),
            std::string::npos);
  EXPECT_NE(error_of({{"params", {kA}}, {"grads", {kA}}, {"weights", {kA}}}, 1).find("digests.weights"),
            std::string::npos);
}

TEST(StepDigests, TheFirstDivergenceIsFoundAtTheStepsBothHold) {
  StepDigests ref{{}, {kA, kA, kA, kA}, {kB, kB, kB, kB}};
  StepDigests run = ref;
  run.params[2] = kC;
  run.grads[3] = kC;
  DigestDivergence d = first_digest_divergence(run, ref);
  EXPECT_EQ(d.params_step, 2);
  EXPECT_EQ(d.grads_step, 3);
  EXPECT_EQ(d.common_steps, 4u);
  // A run holding steps 1 and 3 only: matched by number, not position.
  StepDigests sparse{{1, 3}, {kA, kA}, {kB, kC}};
  DigestDivergence s = first_digest_divergence(sparse, ref);
  EXPECT_EQ(s.common_steps, 2u);
  EXPECT_EQ(s.params_step, -1);
  EXPECT_EQ(s.grads_step, 3);
}

TEST(StepDigests, CompactStepsDropsOnlyTheWholeRun) {
  StepDigests d{{0, 1, 2}, {kA, kA, kA}, {kA, kA, kA}};
  compact_steps(d, 4);
  EXPECT_EQ(d.steps.size(), 3u);  // steps 0..2 of a 4-step run stay explicit
  compact_steps(d, 3);
  EXPECT_TRUE(d.steps.empty());
}

}  // namespace
}  // namespace lockstep

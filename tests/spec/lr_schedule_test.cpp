#include "spec/lr_schedule.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(LrSchedule, ConstantIsTheBaseRate) {
  LrSchedule s;
  s.base_lr = 0.05;
  EXPECT_EQ(s.at(0), 0.05);
  EXPECT_EQ(s.at(999), 0.05);
}

TEST(LrSchedule, LinearWarmupReachesTheBaseRateAtItsLastStep) {
  LrSchedule s{LrSchedule::Kind::kWarmup, 0.1, 4};
  EXPECT_EQ(s.at(0), 0.1 * 0.25);
  EXPECT_EQ(s.at(1), 0.1 * 0.5);
  EXPECT_EQ(s.at(2), 0.1 * 0.75);
  EXPECT_EQ(s.at(3), 0.1);
  EXPECT_EQ(s.at(50), 0.1);
}

TEST(LrSchedule, StepDecayMultipliesByGammaEveryStepSize) {
  LrSchedule s{LrSchedule::Kind::kStep, 1.0, 1, 3, 0.5};
  EXPECT_EQ(s.at(0), 1.0);
  EXPECT_EQ(s.at(2), 1.0);
  EXPECT_EQ(s.at(3), 0.5);
  EXPECT_EQ(s.at(5), 0.5);
  EXPECT_EQ(s.at(6), 0.25);
  EXPECT_EQ(s.at(9), 0.125);
}

TEST(LrSchedule, NamesMatchTheConfigKeys) {
  EXPECT_STREQ(schedule_name(LrSchedule::Kind::kConstant), "constant");
  EXPECT_STREQ(schedule_name(LrSchedule::Kind::kWarmup), "warmup");
  EXPECT_STREQ(schedule_name(LrSchedule::Kind::kStep), "step");
}

}  // namespace
}  // namespace lockstep

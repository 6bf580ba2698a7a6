#include "spec/run_variation.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace lockstep {
namespace {

CpuSet cpus(std::initializer_list<int> list) {
  CpuSet s;
  for (int c : list) s.set(static_cast<size_t>(c));
  return s;
}

std::string refusal(const std::string& spec, const CpuSet& allowed = {}) {
  std::mt19937_64 rng(1);
  try {
    parse_variation(spec, rng, allowed);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  return "(accepted)";
}

TEST(RunVariation, EveryValueWrittenOutParsesBackToItself) {
  std::mt19937_64 rng(7);
  RunVariation v = parse_variation("allocator=70000,malloc-perturb=165,affinity=1+3,env-order,thread-warmup", rng,
                                   cpus({0, 1, 2, 3}));
  EXPECT_EQ(v.allocator_bytes, 70000);
  EXPECT_EQ(v.malloc_perturb, 165);
  EXPECT_EQ(v.affinity, cpus({1, 3}));
  EXPECT_TRUE(v.env_reversed);
  EXPECT_TRUE(v.thread_warmup);
  EXPECT_EQ(variation_spec(v), "allocator=70000,malloc-perturb=165,affinity=1+3,env-order,thread-warmup");
  EXPECT_EQ(parse_variation(variation_spec(v), rng), v);
  EXPECT_EQ(describe_variation(v),
            "a 70000-byte allocator hole before the run; MALLOC_PERTURB_=165; pinned to CPUs 1+3; env vars in reverse "
            "order; the thread pools started before the run");
  EXPECT_EQ(varied_kinds(v),
            (std::vector<std::string>{"allocator", "malloc-perturb", "affinity", "env-order", "thread-warmup"}));
  const std::map<std::string, std::string> fields = {{"vary.affinity", "1+3"},
                                                     {"vary.allocator", "70000"},
                                                     {"vary.env_order", "reversed"},
                                                     {"vary.malloc_perturb", "165"},
                                                     {"vary.thread_warmup", "started first"}};
  EXPECT_EQ(variation_fields(v), fields);
}

TEST(RunVariation, AKindWithoutItsValueDrawsOneInItsRange) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::mt19937_64 rng(seed);
    RunVariation v = parse_variation("allocator,malloc-perturb,affinity", rng, cpus({0, 2, 5}));
    EXPECT_GE(v.allocator_bytes, 65536);
    EXPECT_LE(v.allocator_bytes, 131071);
    EXPECT_GE(v.malloc_perturb, 1);
    EXPECT_LE(v.malloc_perturb, 255);
    EXPECT_EQ(v.affinity, cpus({2, 5}));  // every allowed CPU but the lowest
  }
}

TEST(RunVariation, OnlyKindKeepsOneKindAndNothingElse) {
  std::mt19937_64 rng(1);
  RunVariation v = parse_variation("allocator=65536,env-order", rng);
  EXPECT_EQ(variation_spec(only_kind(v, "allocator")), "allocator=65536");
  EXPECT_EQ(variation_spec(only_kind(v, "env-order")), "env-order");
  EXPECT_TRUE(only_kind(v, "thread-warmup").empty());
  EXPECT_TRUE(RunVariation{}.empty());
  EXPECT_EQ(variation_spec(RunVariation{}), "");
  EXPECT_TRUE(variation_fields(RunVariation{}).empty());
}

TEST(RunVariation, RandomVariationLeavesAffinityOutWithOneCpu) {
  std::mt19937_64 rng(3);
  const std::vector<std::string> all = variation_kinds();
  RunVariation one_cpu = random_variation(all, rng, cpus({0}));
  EXPECT_TRUE(one_cpu.affinity.none());
  EXPECT_EQ(varied_kinds(one_cpu),
            (std::vector<std::string>{"allocator", "malloc-perturb", "env-order", "thread-warmup"}));
  RunVariation two = random_variation(all, rng, cpus({0, 1}));
  EXPECT_EQ(two.affinity, cpus({1}));
  EXPECT_TRUE(random_variation({}, rng, cpus({0, 1})).empty());
  EXPECT_EQ(variation_spec(random_variation({"env-order"}, rng, cpus({0, 1}))), "env-order");
}

TEST(RunVariation, EnvironmentOrderIsReversedOnlyWhenAsked) {
  const std::vector<std::string> env = {"A=1", "B=2", "C=3"};
  RunVariation v;
  EXPECT_EQ(ordered_environment(env, v), env);
  v.env_reversed = true;
  EXPECT_EQ(ordered_environment(env, v), (std::vector<std::string>{"C=3", "B=2", "A=1"}));
}

TEST(RunVariation, MalformedSpecsAreRefusedNamingTheFlagAndKind) {
  EXPECT_EQ(refusal(""), "--vary: expected kinds joined by ',' (e.g. allocator,env-order), got \"\"");
  EXPECT_EQ(refusal("heap"),
            "--vary: unknown kind \"heap\" (one of allocator, malloc-perturb, affinity, env-order, thread-warmup)");
  EXPECT_EQ(refusal("env-order,,allocator"), "--vary: an empty kind in \"env-order,,allocator\"");
  EXPECT_EQ(refusal("env-order,env-order"), "--vary: env-order given twice");
  EXPECT_EQ(refusal("allocator=4096"),
            "--vary: allocator: expected a hole size in bytes from 65536 to 131071 (below malloc's mmap threshold), "
            "got \"4096\"");
  EXPECT_EQ(refusal("allocator=131072").find("--vary: allocator: expected a hole size"), 0u);
  EXPECT_EQ(refusal("allocator=7e4").find("--vary: allocator: expected"), 0u);
  EXPECT_EQ(refusal("malloc-perturb=0"), "--vary: malloc-perturb: expected a byte value from 1 to 255 (MALLOC_PERTURB_), got \"0\"");
  EXPECT_EQ(refusal("malloc-perturb=256").find("--vary: malloc-perturb: expected"), 0u);
  EXPECT_EQ(refusal("env-order=1"), "--vary: env-order: expected no value (\"env-order\" alone), got \"1\"");
  EXPECT_EQ(refusal("thread-warmup="), "--vary: thread-warmup: expected no value (\"thread-warmup\" alone), got \"\"");
  EXPECT_EQ(refusal("affinity=1+1"), "--vary: affinity: expected each CPU once, got \"1+1\"");
  EXPECT_EQ(refusal("affinity=1+"), "--vary: affinity: expected CPU numbers from 0 to 1023 joined by '+' (affinity=1+3), got \"1+\"");
  EXPECT_EQ(refusal("affinity=1024").find("--vary: affinity: expected CPU numbers"), 0u);
  EXPECT_EQ(refusal("affinity=3", cpus({0, 1})), "--vary: affinity: CPU 3 is not one this process may run on (0+1)");
  EXPECT_EQ(refusal("affinity", cpus({0})),
            "--vary: affinity: this process may run on CPU 0 only: there is no other set of CPUs to pin it to (leave "
            "affinity out)");
  EXPECT_EQ(refusal("malloc_perturb=3"),
            "--vary: unknown kind \"malloc_perturb\" (did you mean 'malloc-perturb'?) (one of allocator, "
            "malloc-perturb, affinity, env-order, thread-warmup)");
  std::mt19937_64 rng(1);
  EXPECT_EQ(variation_spec(parse_variation("env-order, thread-warmup ", rng)), "env-order,thread-warmup");
}

}  // namespace
}  // namespace lockstep

// diff_fingerprints: what counts as a difference between two stacks.
#include "record/fingerprint.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {

std::vector<std::string> names(const std::vector<FieldDiff>& diffs) {
  std::vector<std::string> out;
  for (const auto& d : diffs) out.push_back(d.name + (d.input ? " !" : d.relevant ? " *" : ""));
  return out;
}

TEST(DiffFingerprints, InputsThenVersionsThenContractThenRelevantThenTheRest) {
  Fingerprint golden = {{"torch.version", {"1.13.0", true}},  {"os.kernel", {"6.1", false}},
                        {"cpu.isa", {"avx2", true}},          {"data.file_xxh3", {"aa", false, true}},
                        {"git.commit", {"abc", false}},       {"cpu.capability", {"AVX2", true}},
                        {"determinism.fill_uninitialized_memory", {"unsupported (LibTorch < 2.2)", true}}};
  Fingerprint run = golden;
  run["torch.version"].value = "2.4.0";
  run["os.kernel"].value = "6.2";
  run["data.file_xxh3"].value = "bb";
  run["cpu.isa"].relevant = false;  // the run's flag, not the golden's
  run["cpu.isa"].value = "avx512f";
  run["cpu.capability"].value = "AVX512";
  run["determinism.fill_uninitialized_memory"].value = "true";
  EXPECT_EQ(names(diff_fingerprints(golden, run)),
            (std::vector<std::string>{"data.file_xxh3 !", "torch.version *", "determinism.fill_uninitialized_memory *",
                                      "cpu.capability *", "cpu.isa", "os.kernel"}));
}

// Which fields are relevant is what the run says: a golden edited to call
// git.commit relevant does not make a new commit a stack change. The
// golden speaks only for a field the run lacks (a package since removed).
TEST(DiffFingerprints, RelevanceIsTheRunsWhereTheRunHasTheField) {
  Fingerprint golden = {{"git.commit", {"abc", true}}, {"python.packages.foo", {"1.0", true}},
                        {"os.kernel", {"6.1", false}}};
  Fingerprint run = {{"git.commit", {"def", false}}, {"os.kernel", {"6.2", true}}};
  EXPECT_EQ(names(diff_fingerprints(golden, run)),
            (std::vector<std::string>{"python.packages.foo *", "os.kernel *", "git.commit"}));
}

// A trainer's stack: torch and its CUDA before the contract; the packages
// it imported before other relevant fields; a package it never imported
// after every informational field.
TEST(DiffFingerprints, ImportedPackagesBeforeOtherFieldsAndUnimportedOnesLast) {
  Fingerprint golden = {{"python.torch", {"1.13.1", true}},         {"python.version", {"3.11.2", true}},
                        {"python.packages.numpy", {"1.24.2", true}}, {"python.packages.zipp", {"1.0", false}},
                        {"python.executable", {"/usr/bin/python3", false}},
                        {"determinism.mode", {"strict", true}},      {"python.torch.cuda", {"(absent)", true}}};
  Fingerprint run = golden;
  for (auto& [name, field] : run) field.value += "x";
  EXPECT_EQ(names(diff_fingerprints(golden, run)),
            (std::vector<std::string>{"python.torch *", "python.torch.cuda *", "determinism.mode *",
                                      "python.packages.numpy *", "python.version *", "python.executable",
                                      "python.packages.zipp"}));
}

// A field one side lacks and the other could not read holds no value on
// either: no difference (a newer lockstep records CUDA fields a CPU
// machine reads as absent). A value against a missing field still is one.
TEST(DiffFingerprints, MissingAgainstAbsentIsNoDifference) {
  Fingerprint golden = {{"device", {"cpu", true}}};
  Fingerprint run = {{"device", {"cpu", true}},
                     {"cuda.sm_count", {"(absent: libcuda.so.1 not found (no NVIDIA driver))", false}},
                     {"env.NCCL_NVLS_ENABLE", {"(unset)", true}},  // a variable a newer lockstep records
                     {"cuda.gpu_name", {"NVIDIA H200", false}}};
  std::vector<FieldDiff> d = diff_fingerprints(golden, run);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "cuda.gpu_name");
  EXPECT_EQ(d[0].golden, "(missing)");
  // Two different reasons for an absent value are shown: both were read.
  Fingerprint other = run;
  other["cuda.sm_count"].value = "(absent: cuInit failed: CUDA_ERROR_NO_DEVICE (100))";
  EXPECT_EQ(names(diff_fingerprints(run, other)), (std::vector<std::string>{"cuda.sm_count"}));
}

// A fingerprint read from a file holds at most kMaxFingerprintFields
// fields: more is exit 2 naming the field, not memory without bound.
TEST(Fingerprint, MoreFieldsThanTheCapIsBadInput) {
  nlohmann::json doc = {{"fingerprint", nlohmann::json::object()}};
  for (size_t i = 0; i <= kMaxFingerprintFields; ++i)
    doc["fingerprint"]["f" + std::to_string(i)] = {{"value", "x"}, {"relevant", false}};
  JsonView v(doc, "run.json");
  try {
    fingerprint_from_json(v.at("fingerprint"));
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), "run.json: fingerprint: expected at most 20000 fields, got 20001");
  }
  doc["fingerprint"].erase("f0");
  EXPECT_EQ(fingerprint_from_json(JsonView(doc, "run.json").at("fingerprint")).size(), kMaxFingerprintFields);
}

}  // namespace
}  // namespace lockstep

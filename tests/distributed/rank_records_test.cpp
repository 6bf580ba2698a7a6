// Merging the ranks' records of a multi-rank run into one run record.
#include "distributed/rank_records.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <cmath>

#include "core/error.h"
#include "record_builder.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;
using testing::make_probe;
using testing::make_record;

RunRecord rank_record(int rank, std::vector<std::string> batch_hashes) {
  RunRecord r = make_record({2.5, 2.25});
  r.series["rank0/loss"] = r.series.at("loss");
  r.hashes["params"] = std::string(32, 'c');
  r.resources.peak_rss_bytes = 1000 + rank;
  for (size_t k = 0; k < batch_hashes.size(); ++k) {
    BatchProbe p = make_probe(static_cast<int64_t>(k), 0.5 + rank);
    p.sample_index_hash = batch_hashes[k];
    p.rank = rank;
    r.probes.push_back(p);
    r.train_probes.push_back(p);
  }
  return r;
}

TEST(RankRecords, InterleavesTheRanksBatchesAndKeepsRankZerosGlobalValues) {
  RunRecord merged = merge_rank_records(
      {rank_record(0, {"0000000000000a00", "0000000000000a01"}), rank_record(1, {"0000000000000b00", "0000000000000b01"})},
      "x.ranks");
  ASSERT_EQ(merged.probes.size(), 4u);
  const char* want[] = {"0000000000000a00", "0000000000000b00", "0000000000000a01", "0000000000000b01"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(merged.probes[i].sample_index_hash, want[i]) << i;
    EXPECT_EQ(merged.probes[i].batch, static_cast<int64_t>(i));
    EXPECT_EQ(merged.probes[i].rank, static_cast<int64_t>(i % 2));
    EXPECT_EQ(merged.train_probes[i].sample_index_hash, want[i]) << i;
  }
  EXPECT_EQ(merged.resources.peak_rss_bytes, 1001);
  EXPECT_EQ(merged.series.at("loss").values, (std::vector<double>{2.5, 2.25}));
}

TEST(RankRecords, ARankThatDisagreesOnAGlobalValueIsExitOneNamingIt) {
  RunRecord a = rank_record(0, {"0000000000000a00"}), b = rank_record(1, {"0000000000000b00"});
  b.series["loss"].values[1] = std::nextafter(2.25, 3.0);
  try {
    merge_rank_records({a, b}, "x.ranks");
    FAIL() << "merged";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRegression);
    EXPECT_STREQ(e.what(), "x.ranks: rank 1's series loss at step 1 differs from rank 0's (the ranks must agree on "
                           "every global value)");
  }
  RunRecord c = rank_record(1, {"0000000000000b00", "0000000000000b01"});
  EXPECT_THROW(merge_rank_records({a, c}, "x.ranks"), Error);  // another batch count
  RunRecord h = rank_record(1, {"0000000000000b00"});
  h.hashes["params"] = std::string(32, 'd');
  EXPECT_THROW(merge_rank_records({a, h}, "x.ranks"), Error);
}

// A resumed trainer's second half numbers on from the first half's entries.
TEST(RankRecords, TheSecondHalfOfAResumedRunNumbersOnFromTheFirst) {
  std::vector<std::vector<BatchProbe>> per_rank = {{make_probe(5, 0.5), make_probe(6, 0.5)},
                                                   {make_probe(5, 1.5), make_probe(6, 1.5)}};
  std::vector<BatchProbe> out = interleave_rank_probes(per_rank, "x", 10);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].batch, 10);
  EXPECT_EQ(out[3].batch, 13);
  EXPECT_EQ(out[1].rank, 1);
  EXPECT_EQ(out[2].rank, 0);
  EXPECT_EQ(interleave_rank_probes(per_rank, "x")[3].batch, 3);
}

// Ranks on machines with another stack: the run is not a single-stack run.
TEST(RankRecords, RanksOnAnotherStackJoinTheFingerprint) {
  RunRecord a = rank_record(0, {"0000000000000a00"}), b = rank_record(1, {"0000000000000b00"});
  a.fingerprint["cpu.capability"] = {"AVX2", true, false};
  a.fingerprint["cpu.model"] = {"one", false, false};
  b.fingerprint = a.fingerprint;
  b.fingerprint["cpu.model"] = {"another", false, false};  // informational: not a stack difference
  EXPECT_EQ(merge_rank_records({a, b}, "x.ranks").fingerprint.count("distributed.mixed_stack"), 0u);
  b.fingerprint["cpu.capability"] = {"AVX512", true, false};
  RunRecord merged = merge_rank_records({a, b}, "x.ranks");
  ASSERT_EQ(merged.fingerprint.count("distributed.mixed_stack"), 1u);
  EXPECT_EQ(merged.fingerprint.at("distributed.mixed_stack").value, "rank 1 cpu.capability = AVX512 (rank 0: AVX2)");
  EXPECT_TRUE(merged.fingerprint.at("distributed.mixed_stack").relevant);
  EXPECT_EQ(merged.fingerprint.at("cpu.capability").value, "AVX2");
}

}  // namespace
}  // namespace lockstep

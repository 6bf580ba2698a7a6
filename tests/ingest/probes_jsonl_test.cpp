#include "ingest/probes_jsonl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/ingest_test_util.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

BatchProbe probe(int64_t batch) {
  BatchProbe p;
  p.batch = batch;
  p.sample_index_hash = "0123456789abcdef";
  p.inputs.shape = {4, 3};
  p.inputs.dtype = "float32";
  p.inputs.xxh3_128 = std::string(32, 'a');
  p.inputs.sum = 1.5 + static_cast<double>(batch);
  p.inputs.mean = 0.125;
  p.inputs.std = 0.1;
  p.inputs.min = -1;
  p.inputs.max = 2;
  p.labels.shape = {4};
  p.labels.dtype = "int64";
  p.labels.xxh3_128 = std::string(32, 'b');
  p.labels.sum = 6;
  p.labels.mean = 1.5;
  p.labels.std = 0.5;
  p.labels.min = 1;
  p.labels.max = 2;
  return p;
}

std::string line(int64_t batch) { return to_json(probe(batch)).dump() + "\n"; }

class ProbesJsonl : public ::testing::Test {
 protected:
  IngestTempDir dir_{"probes"};
  std::string file_ = dir_.path("probes.jsonl");
  std::string error(const std::string& text) {
    write_bytes(file_, text);
    return exit2_message([&] { read_probes_jsonl(file_); });
  }
};

TEST_F(ProbesJsonl, ReadsProbesInOrder) {
  write_bytes(file_, line(0) + "\n" + line(1) + line(2));
  std::vector<BatchProbe> probes = read_probes_jsonl(file_);
  ASSERT_EQ(probes.size(), 3u);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(probes[static_cast<size_t>(b)].batch, b);
    EXPECT_EQ(to_json(probes[static_cast<size_t>(b)]), to_json(probe(b)));
  }
  EXPECT_EQ(probes[2].inputs.sum, 3.5);
  EXPECT_EQ(probes[1].labels.shape, (std::vector<int64_t>{4}));
}

TEST_F(ProbesJsonl, BatchesMustBeNumberedInOrder) {
  EXPECT_EQ(error(line(0) + line(2)),
            file_ + ": line 2: batch: expected batch 1 (batches are numbered 0, 1, 2, ... in order), got 2");
  EXPECT_EQ(error(line(1)),
            file_ + ": line 1: batch: expected batch 0 (batches are numbered 0, 1, 2, ... in order), got 1");
}

TEST_F(ProbesJsonl, RecordErrorsNameTheLine) {
  nlohmann::json bad = to_json(probe(1));
  bad["inputs"]["std"] = "wide";
  EXPECT_HAS(error(line(0) + bad.dump() + "\n"), file_ + ": line 2: inputs.std: expected");
  nlohmann::json missing = to_json(probe(0));
  missing.erase("labels");
  EXPECT_HAS(error(missing.dump() + "\n"), file_ + ": line 1: labels: expected");
}

TEST_F(ProbesJsonl, MalformedJsonNaNTokensAndDuplicates) {
  EXPECT_HAS(error(line(0) + "{\"batch\": 1,\n"), file_ + ": line 2: ");
  std::string with_nan = line(0);
  with_nan.replace(with_nan.find("\"sum\":1.5"), 9, "\"sum\":NaN");
  EXPECT_HAS(error(with_nan), file_ + ": line 1: ");
  EXPECT_HAS(error("{\"batch\": 0, \"batch\": 0}\n"), file_ + ": line 1: batch: expected each key once");
}

TEST_F(ProbesJsonl, EmptyFiles) {
  EXPECT_EQ(error(""), file_ + ": expected a non-empty log (the file has 0 bytes)");
  EXPECT_EQ(error("\n \n"), file_ + ": expected at least one batch probe (the file holds only blank lines)");
}

}  // namespace
}  // namespace lockstep

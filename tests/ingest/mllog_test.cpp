#include "ingest/mllog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ingest/ingest_test_util.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

std::string mllog(const std::string& key, const std::string& value, const std::string& metadata) {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1700000000000, \"event_type\": \"POINT_IN_TIME\", \"key\": \"" +
         key + "\", \"value\": " + value + ", \"metadata\": {\"file\": \"train.py\", \"lineno\": 42" +
         (metadata.empty() ? "" : ", " + metadata) + "}}\n";
}

class Mllog : public ::testing::Test {
 protected:
  IngestTempDir dir_{"mllog"};
  std::string file_ = dir_.path("result_0.txt");

  MetricsSpec spec(const std::string& step = "epoch_num") const {
    MetricsSpec s;
    s.format = MetricsFormat::kMllog;
    s.path = file_;
    s.series = {{"eval_accuracy", "eval_accuracy"}};
    s.mllog_step = step;
    return s;
  }
  std::string error(const std::string& text, const std::string& step = "epoch_num") {
    write_bytes(file_, text);
    return exit2_message([&] { read_metrics(spec(step)); });
  }
};

TEST_F(Mllog, ReadsTheRequestedKeyWithPrefixesAndOtherLines) {
  write_bytes(file_,
              "starting run\n" + mllog("submission_benchmark", "\"resnet\"", "") +
                  mllog("epoch_start", "null", "\"epoch_num\": 1") + "[0] " +
                  mllog("eval_accuracy", "0.25", "\"epoch_num\": 1") + "some other output :::MLLO\n" +
                  "[1] " + mllog("eval_accuracy", "NaN", "\"epoch_num\": 2") +
                  mllog("eval_accuracy", "0.75", "\"epoch_num\": 3"));
  Series s = read_metrics(spec()).at("eval_accuracy");
  EXPECT_EQ(s.dtype, Series::Dtype::kFloat64);
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_EQ(s.values[0], 0.25);
  EXPECT_TRUE(std::isnan(s.values[1]));
  EXPECT_EQ(s.values[2], 0.75);
  EXPECT_EQ(s.steps, (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(Mllog, SamplesCountSteps) {
  write_bytes(file_, mllog("eval_accuracy", "0.5", "\"samples_count\": 0, \"epoch_num\": 7") +
                         mllog("eval_accuracy", "0.625", "\"samples_count\": 1024, \"epoch_num\": 7"));
  Series s = read_metrics(spec("samples_count")).at("eval_accuracy");
  EXPECT_EQ(s.steps, (std::vector<int64_t>{0, 1024}));
  EXPECT_EQ(s.values, (std::vector<double>{0.5, 0.625}));
}

TEST_F(Mllog, MissingStepInMetadata) {
  EXPECT_EQ(error(mllog("eval_accuracy", "0.5", "\"epoch_num\": 1") + mllog("eval_accuracy", "0.6", "")),
            file_ + ": line 2: key 'eval_accuracy': expected metadata.epoch_num, the step (missing)");
  EXPECT_EQ(error(":::MLLOG {\"key\": \"eval_accuracy\", \"value\": 0.5}\n"),
            file_ + ": line 1: key 'eval_accuracy': expected a \"metadata\" object holding the step \"epoch_num\"");
  EXPECT_EQ(error(mllog("eval_accuracy", "0.5", "\"epoch_num\": \"one\"")),
            file_ + ": line 1: key 'eval_accuracy': expected metadata.epoch_num, a non-negative integer step, got "
                    "a string");
}

TEST_F(Mllog, ValueMustBeANumber) {
  EXPECT_EQ(error(mllog("eval_accuracy", "\"high\"", "\"epoch_num\": 1")),
            file_ + ": line 1: key 'eval_accuracy': expected a number \"value\" (or NaN, Infinity, -Infinity, "
                    "\"nan\", \"inf\", \"-inf\"), got a string");
}

TEST_F(Mllog, MalformedRecordAndMissingKey) {
  EXPECT_HAS(error(":::MLLOG {\"key\": \"eval_accuracy\", \n"), file_ + ": line 1: expected one JSON object per line");
  EXPECT_EQ(error(":::MLLOG {\"value\": 1}\n"), file_ + ": line 1: expected an MLLOG record with a string \"key\"");
}

TEST_F(Mllog, StepOrderDuplicatesAndGaps) {
  EXPECT_EQ(error(mllog("eval_accuracy", "0.5", "\"epoch_num\": 2") + mllog("eval_accuracy", "0.6", "\"epoch_num\": 1")),
            file_ + ": line 2: key 'eval_accuracy': expected steps in increasing order; step 1 comes after step 2 "
                    "(line 1)");
  EXPECT_EQ(error(mllog("eval_accuracy", "0.5", "\"epoch_num\": 1") + mllog("eval_accuracy", "0.6", "\"epoch_num\": 1")),
            file_ + ": line 2: key 'eval_accuracy': expected one value per step; step 1 is logged twice with "
                    "different values: 0.5 at line 1, 0.6 here");
  EXPECT_HAS(error(mllog("eval_accuracy", "0.5", "\"epoch_num\": 1") + mllog("eval_accuracy", "0.6", "\"epoch_num\": 2") +
                   mllog("eval_accuracy", "0.7", "\"epoch_num\": 4")),
             "line 3: key 'eval_accuracy': expected step 3 before step 4");
}

TEST_F(Mllog, NoMllogLinesOrNoRequestedKey) {
  EXPECT_EQ(error("just a log\n"), file_ + ": expected MLPerf log lines (\":::MLLOG {...}\"); the file has none");
  EXPECT_EQ(error(mllog("train_loss", "0.5", "\"epoch_num\": 1")),
            file_ + ": key 'eval_accuracy': expected the key of series eval_accuracy in the log's :::MLLOG lines; "
                    "it never appears (keys logged: 'train_loss')");
}

}  // namespace
}  // namespace lockstep

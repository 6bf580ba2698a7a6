#include "ingest/jsonl.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ingest/ingest_test_util.h"
#include "ingest/json_line.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

class Jsonl : public ::testing::Test {
 protected:
  IngestTempDir dir_{"jsonl"};
  std::string file_ = dir_.path("metrics.jsonl");

  std::map<std::string, Series> read(const std::string& text,
                                     std::map<std::string, std::string> series = {{"loss", "loss"}}) {
    write_bytes(file_, text);
    MetricsSpec spec;
    spec.format = MetricsFormat::kJsonl;
    spec.path = file_;
    spec.series = std::move(series);
    return read_metrics(spec);
  }
  std::string error(const std::string& text, std::map<std::string, std::string> series = {{"loss", "loss"}}) {
    return exit2_message([&] { read(text, series); });
  }
};

TEST_F(Jsonl, ReadsEveryRequestedKeyAsFloat64) {
  auto out = read(
      "{\"step\": 0, \"loss\": 2.5, \"lr\": 0.1, \"note\": \"warmup\"}\n"
      "{\"step\": 1, \"loss\": 0.1, \"lr\": 1e-3}\n"
      "\n"
      "{\"step\": 2, \"loss\": 3, \"lr\": 0.001, \"extra\": {\"x\": [1, 2]}}\n",
      {{"loss", "loss"}, {"learning_rate", "lr"}});
  EXPECT_EQ(out.at("loss").dtype, Series::Dtype::kFloat64);
  EXPECT_EQ(out.at("loss").values, (std::vector<double>{2.5, 0.1, 3.0}));
  EXPECT_TRUE(out.at("loss").steps.empty());
  EXPECT_EQ(out.at("learning_rate").values, (std::vector<double>{0.1, 1e-3, 0.001}));
}

// A long log (past the line where the readers reserve room for the whole
// file) reads every value in place, and a step missing near its end is
// still named by its line: steps and lines are kept as arithmetic runs.
TEST_F(Jsonl, ALongLogKeepsEveryValueAndNamesAHoleByItsLine) {
  std::string text;
  for (int s = 0; s < 20000; ++s)
    text += "{\"step\": " + std::to_string(s) + ", \"loss\": " + std::to_string(s) + ".5}\n";
  auto out = read(text);
  ASSERT_EQ(out.at("loss").values.size(), 20000u);
  EXPECT_TRUE(out.at("loss").steps.empty());  // 0 .. n-1
  for (int s = 0; s < 20000; ++s) ASSERT_EQ(out.at("loss").values[static_cast<size_t>(s)], s + 0.5);

  std::string holed;
  for (int s = 0; s < 20000; s += 10)
    if (s != 18000) holed += "{\"step\": " + std::to_string(s) + ", \"loss\": 1.5}\n";
  EXPECT_EQ(error(holed), file_ + ": line 1801: key 'loss': expected step 18000 before step 18010: the steps go every "
                                  "10 steps from step 0, and step 18000 is missing");
}

// A file of "\r" line endings reads as one line: said as what it is,
// whether or not it ends in "\r", not as a JSON syntax error.
TEST_F(Jsonl, ClassicMacLineEndingsAreNamed) {
  const std::string said = file_ + ": line 1: expected lines ending in \"\\n\" or \"\\r\\n\", got \"\\r\" alone (a file "
                           "with classic Mac OS line endings?)";
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1.5}\r{\"step\": 1, \"loss\": 1.25}\r"), said);
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1.5}\r{\"step\": 1, \"loss\": 1.25}\r\n"), said);
  EXPECT_EQ(read("{\"step\": 0, \"loss\": 1.5}\r\n{\"step\": 1, \"loss\": 1.25}\r\n").at("loss").values,
            (std::vector<double>{1.5, 1.25}));
}

TEST_F(Jsonl, PythonNonFiniteTokensAndLockstepStrings) {
  auto out = read(
      "{\"step\": 0, \"loss\": NaN}\n"
      "{\"step\": 1, \"loss\": Infinity}\n"
      "{\"step\": 2, \"loss\":-Infinity}\n"
      "{\"step\": 3, \"loss\": \"nan\"}\n"
      "{\"step\": 4, \"loss\": \"inf\"}\n"
      "{\"step\": 5, \"loss\": \"-inf\", \"list\": [NaN, Infinity]}\r\n");
  const auto& v = out.at("loss").values;
  ASSERT_EQ(v.size(), 6u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[2], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[5], -std::numeric_limits<double>::infinity());
}

TEST_F(Jsonl, AFifoIsRefusedWithoutWaitingForAWriter) {
  std::string fifo = dir_.path("fifo.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  MetricsSpec spec;
  spec.format = MetricsFormat::kJsonl;
  spec.path = fifo;
  spec.series = {{"loss", "loss"}};
  std::string m = exit2_message([&] { read_metrics(spec); });
  EXPECT_HAS(m, fifo + ": expected a regular file");
}

TEST(JsonlTokens, OnlyValueTokensOutsideStringsAreReplaced) {
  std::string scratch;
  EXPECT_EQ(replace_nonfinite_tokens(R"({"a": NaN, "b": [Infinity, -Infinity]})", scratch),
            R"({"a": "nan", "b": ["inf", "-inf"]})");
  // Inside strings (with escaped quotes), as keys, or as part of a longer word: untouched.
  std::string s = R"({"note": "NaN, Infinity \" NaN", "NaN": 1, "c": NaNa, "d": Infinityx})";
  EXPECT_EQ(replace_nonfinite_tokens(s, scratch), s);
  std::string plain = R"({"step": 1, "loss": 0.5})";
  EXPECT_EQ(replace_nonfinite_tokens(plain, scratch).data(), plain.data());  // no copy
}

TEST_F(Jsonl, NanInsideAStringValueIsNotAltered) {
  // A requested key whose value is a string mentioning NaN is not a number.
  std::string msg = error("{\"step\": 0, \"loss\": \"NaN\"}\n");
  EXPECT_EQ(msg, file_ + ": line 1: key 'loss': expected a number (or NaN, Infinity, -Infinity, \"nan\", \"inf\", "
                         "\"-inf\"), got a string");
  auto out = read("{\"step\": 0, \"loss\": 1.0, \"note\": \"loss: NaN\"}\n");
  EXPECT_EQ(out.at("loss").values, (std::vector<double>{1.0}));
}

TEST_F(Jsonl, LinesWithoutAKeyAreNotLoggedSteps) {
  auto out = read(
      "{\"step\": 0, \"loss\": 1.0, \"eval\": 0.5}\n"
      "{\"step\": 1, \"loss\": 2.0}\n"
      "{\"step\": 2, \"loss\": 3.0, \"eval\": 0.75}\n"
      "{\"step\": 3, \"loss\": 4.0}\n"
      "{\"step\": 4, \"loss\": 5.0, \"eval\": 0.875}\n",
      {{"loss", "loss"}, {"eval", "eval"}});
  EXPECT_EQ(out.at("loss").values.size(), 5u);
  EXPECT_EQ(out.at("eval").values, (std::vector<double>{0.5, 0.75, 0.875}));
  EXPECT_EQ(out.at("eval").steps, (std::vector<int64_t>{0, 2, 4}));
}

TEST_F(Jsonl, StepKeyIsConfigurable) {
  write_bytes(file_, "{\"iteration\": 10, \"loss\": 1}\n{\"iteration\": 20, \"loss\": 2}\n");
  MetricsSpec spec;
  spec.path = file_;
  spec.series = {{"loss", "loss"}};
  spec.step_key = "iteration";
  Series s = read_metrics(spec).at("loss");
  EXPECT_EQ(s.steps, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(s.values, (std::vector<double>{1, 2}));
}

TEST_F(Jsonl, DuplicateStepSameValueAcceptedOtherValueNamesBothLines) {
  EXPECT_EQ(read("{\"step\": 0, \"loss\": 1}\n{\"step\": 0, \"loss\": 1.0}\n{\"step\": 1, \"loss\": 2}\n")
                .at("loss")
                .values,
            (std::vector<double>{1, 2}));
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1}\n{\"step\": 1, \"loss\": 2}\n{\"step\": 1, \"loss\": 2.5}\n"),
            file_ + ": line 3: key 'loss': expected one value per step; step 1 is logged twice with different "
                    "values: 2 at line 2, 2.5 here");
}

TEST_F(Jsonl, StepsMustIncrease) {
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1}\n{\"step\": 2, \"loss\": 2}\n{\"step\": 1, \"loss\": 3}\n"),
            file_ + ": line 3: key 'loss': expected steps in increasing order; step 1 comes after step 2 (line 2)");
}

TEST_F(Jsonl, GapNamesTheMissingStep) {
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1}\n{\"step\": 10, \"loss\": 2}\n{\"step\": 30, \"loss\": 3}\n"),
            file_ + ": line 3: key 'loss': expected step 20 before step 30: the steps go every 10 steps from "
                    "step 0, and step 20 is missing");
}

TEST_F(Jsonl, BadSteps) {
  EXPECT_EQ(error("{\"step\": -1, \"loss\": 1}\n"),
            file_ + ": line 1: key 'step': expected a non-negative integer step, got a number that is not one");
  EXPECT_EQ(error("{\"step\": 1.5, \"loss\": 1}\n"),
            file_ + ": line 1: key 'step': expected a non-negative integer step, got a number that is not one");
  EXPECT_EQ(error("{\"step\": \"3\", \"loss\": 1}\n"),
            file_ + ": line 1: key 'step': expected a non-negative integer step, got a string");
  EXPECT_EQ(error("{\"loss\": 1}\n"), file_ + ": line 1: expected the step key 'step' on a line that logs 'loss'");
  // 2.0 is an integer written as a float.
  EXPECT_EQ(read("{\"step\": 2.0, \"loss\": 1}\n").at("loss").steps, (std::vector<int64_t>{2}));
}

TEST_F(Jsonl, ValueThatIsNotANumber) {
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1}\n{\"step\": 1, \"loss\": null}\n"),
            file_ + ": line 2: key 'loss': expected a number (or NaN, Infinity, -Infinity, \"nan\", \"inf\", "
                    "\"-inf\"), got null");
  EXPECT_HAS(error("{\"step\": 0, \"loss\": [1]}\n"), "got an array");
}

TEST_F(Jsonl, MalformedLinesAndDuplicateKeys) {
  EXPECT_HAS(error("{\"step\": 0, \"loss\": 1}\n{\"step\": 1, \"loss\": \n"), file_ + ": line 2: expected one JSON object per line");
  EXPECT_EQ(error("[1, 2]\n"), file_ + ": line 1: expected one JSON object per line, got an array");
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1, \"loss\": 2}\n"),
            file_ + ": line 1: expected each key once in every object; \"loss\" is written twice");
  EXPECT_HAS(error("{\"step\": 0, \"loss\": NaNa}\n"), file_ + ": line 1: expected one JSON object per line");
}

TEST_F(Jsonl, KeyThatNeverAppears) {
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1}\n", {{"loss", "loss"}, {"acc", "accuracy"}}),
            file_ + ": key 'accuracy': expected the key of series acc in the log; it never appears");
  EXPECT_EQ(error("{\"step\": 0, \"loss\": 1, \"lr\": 0.1}\n", {{"loss", "los"}}),
            file_ + ": key 'los': expected the key of series loss in the log; it never appears (did you mean 'loss'?)");
  EXPECT_EQ(error("{\"step\": 0, \"lr\": 0.1, \"grad_norm\": 3}\n", {{"acc", "accuracy"}}),
            file_ + ": key 'accuracy': expected the key of series acc in the log; it never appears "
                    "(keys logged: 'grad_norm' 'lr')");
}

TEST_F(Jsonl, EmptyOrBlankFile) {
  EXPECT_EQ(error(""), file_ + ": expected a non-empty log (the file has 0 bytes)");
  EXPECT_HAS(error("\n\n  \n"), "never appears");
}

TEST_F(Jsonl, OverlongLineIsRefused) {
  std::string big = "{\"step\": 0, \"loss\": 1, \"pad\": \"" + std::string(17u << 20, 'x') + "\"}\n";
  EXPECT_EQ(error(big), file_ + ": line 1: expected a line of at most 16777216 bytes (the file is not a "
                                "line-based log)");
}

TEST_F(Jsonl, LastLineWithoutNewlineAndBom) {
  EXPECT_EQ(read("\xEF\xBB\xBF{\"step\": 0, \"loss\": 1}\n{\"step\": 1, \"loss\": 2}").at("loss").values,
            (std::vector<double>{1, 2}));
}

}  // namespace
}  // namespace lockstep

#include "ingest/metrics_csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ingest/ingest_test_util.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

class Csv : public ::testing::Test {
 protected:
  IngestTempDir dir_{"csv"};
  std::string file_ = dir_.path("metrics.csv");

  std::map<std::string, Series> read(const std::string& text,
                                     std::map<std::string, std::string> series = {{"loss", "loss"}}) {
    write_bytes(file_, text);
    MetricsSpec spec;
    spec.format = MetricsFormat::kCsv;
    spec.path = file_;
    spec.series = std::move(series);
    return read_metrics(spec);
  }
  std::string error(const std::string& text, std::map<std::string, std::string> series = {{"loss", "loss"}}) {
    return exit2_message([&] { read(text, series); });
  }
};

TEST_F(Csv, DataframeRegressionLayoutWithIndexColumn) {
  auto out = read(",step,loss,lr\n0,0,2.302585092994046,0.1\n1,1,1.5,0.05\n2,2,0.1,0.025\n",
                  {{"loss", "loss"}, {"learning_rate", "lr"}});
  EXPECT_EQ(out.at("loss").dtype, Series::Dtype::kFloat64);
  EXPECT_EQ(out.at("loss").values, (std::vector<double>{2.302585092994046, 1.5, 0.1}));
  EXPECT_TRUE(out.at("loss").steps.empty());
  EXPECT_EQ(out.at("learning_rate").values, (std::vector<double>{0.1, 0.05, 0.025}));
}

// A file cut mid-line (a trainer killed while writing, a copy cut short)
// could leave a last value that still parses ("1.125" cut to "1.1"): a last
// line without its newline is exit 2 naming the line. A blank one is not.
TEST_F(Csv, ALastLineWithoutItsNewlineIsACutFile) {
  EXPECT_EQ(error("step,loss\n0,1.5\n1,1.1"),
            file_ + ": line 3: expected a line ending in a newline; the file ends mid-line (cut short while being "
                    "written, or copied in part), so its last value cannot be trusted");
  EXPECT_EQ(read("step,loss\n0,1.5\n1,1.125\n  ").at("loss").values, (std::vector<double>{1.5, 1.125}));
  // Lines ended by "\r" alone read as one line without its newline: said
  // as what they are.
  EXPECT_EQ(error("step,loss\r0,1.0\r1,0.9\r"),
            file_ + ": line 1: expected lines ending in \"\\n\" or \"\\r\\n\", got \"\\r\" alone (a file with classic "
                    "Mac OS line endings?)");
  EXPECT_EQ(read("step,loss\r\n0,1.5\r\n").at("loss").values, (std::vector<double>{1.5}));
}

// pytest-regressions' num_regression writes pandas' index as the first,
// unnamed column and no step column: that index is the step, by default
// and when named with the step key "".
TEST_F(Csv, PandasUnnamedIndexIsTheStep) {
  const std::string text = ",loss\n0,1.5\n1,1.25\n2,1\n";
  auto by_default = read(text);
  EXPECT_EQ(by_default.at("loss").values, (std::vector<double>{1.5, 1.25, 1.0}));
  write_bytes(file_, text);
  MetricsSpec spec;
  spec.format = MetricsFormat::kCsv;
  spec.path = file_;
  spec.series = {{"loss", "loss"}};
  spec.step_key = "";
  EXPECT_EQ(read_metrics(spec).at("loss").values, (std::vector<double>{1.5, 1.25, 1.0}));
  write_bytes(file_, "step,loss\n0,1\n");
  EXPECT_EQ(exit2_message([&] { read_metrics(spec); }),
            file_ + ": column '': expected an unnamed first column (the header's first cell empty, pandas' index) "
                    "for the step key \"\"; the first cell is 'step'");
  EXPECT_EQ(error(",loss\nx,1\n"),
            file_ + ": line 2: column '(unnamed index)': expected a non-negative integer step, got \"x\"");
  spec.step_key = "iteration";
  write_bytes(file_, text);
  EXPECT_EQ(exit2_message([&] { read_metrics(spec); }),
            file_ + ": column 'iteration': expected a step column 'iteration' in the header (it has none); the first "
                    "column is unnamed (pandas' index): step key \"\" names it");
}

TEST_F(Csv, NonFiniteSpellingsAndEmptyCells) {
  auto out = read(
      "step,loss,eval\r\n0,nan,\r\n1,NaN,0.5\r\n2,inf,\r\n3,-inf,0.25\r\n4,Infinity,\r\n5,-Infinity,0.125\r\n",
      {{"loss", "loss"}, {"eval", "eval"}});
  const auto& v = out.at("loss").values;
  ASSERT_EQ(v.size(), 6u);
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  EXPECT_EQ(v[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[3], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[4], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[5], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out.at("eval").values, (std::vector<double>{0.5, 0.25, 0.125}));
  EXPECT_EQ(out.at("eval").steps, (std::vector<int64_t>{1, 3, 5}));
}

TEST_F(Csv, QuotedCells) {
  auto out = read("\"step\",\"train, loss\",\"say \"\"hi\"\"\"\n0,\"1.5\",x\n1, 2.5 ,\"y,z\"\n",
                  {{"loss", "train, loss"}});
  EXPECT_EQ(out.at("loss").values, (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(error("step,loss\n0,\"1.5\n1,2\n"),
            file_ + ": line 2: expected a closing quote for the cell opened at column 3 (a quoted cell spanning "
                    "lines is not supported)");
  EXPECT_HAS(error("step,loss\n0,\"1.5\"x\n"), file_ + ": line 2: expected a comma or the end of the line");
  EXPECT_HAS(error("step,loss\n0,1\"5\n"), file_ + ": line 2: expected a double quote only around a whole cell");
}

TEST(CsvCells, Numbers) {
  double v = 0;
  EXPECT_TRUE(parse_csv_number("-1.25e-3", v));
  EXPECT_EQ(v, -1.25e-3);
  EXPECT_TRUE(parse_csv_number("+4", v));
  EXPECT_EQ(v, 4.0);
  EXPECT_TRUE(parse_csv_number("5e-324", v));  // the smallest subnormal
  EXPECT_EQ(v, 5e-324);
  EXPECT_TRUE(parse_csv_number("0.1", v));
  EXPECT_EQ(v, 0.1);
  for (const char* bad : {"", "+", "-", "abc", "1.5x", "0x10", "1e999", "+-1", "--1", "1,5", "nana", " 1"})
    EXPECT_FALSE(parse_csv_number(bad, v)) << bad;
  int64_t step = 0;
  EXPECT_TRUE(parse_csv_step("12", step));
  EXPECT_EQ(step, 12);
  EXPECT_TRUE(parse_csv_step("12.0", step));
  EXPECT_EQ(step, 12);
  EXPECT_TRUE(parse_csv_step("+3", step));  // a sign as a value may carry it
  EXPECT_EQ(step, 3);
  for (const char* bad : {"", "+", "++1", "+-1", "-1", "1.5", "1.", "1e3", "x", "99999999999999999999"})
    EXPECT_FALSE(parse_csv_step(bad, step)) << bad;
}

TEST_F(Csv, MissingColumns) {
  EXPECT_EQ(error("step,los\n0,1\n"), file_ + ": column 'loss': expected a metric column 'loss' in the header (did "
                                              "you mean 'los'?)");
  EXPECT_EQ(error("iteration,loss\n0,1\n"),
            file_ + ": column 'step': expected a step column 'step' in the header (it has none)");
  EXPECT_EQ(error("step,loss,loss\n0,1,1\n"),
            file_ + ": line 1 (the header): expected the metric column 'loss' once; it is columns 2 and 3");
  EXPECT_EQ(error("step,loss\n0,\n1,\n"),
            file_ + ": column 'loss': expected the column of series loss with a value on any row (the column is "
                    "empty); it never appears");
  EXPECT_EQ(error("\n\n"), file_ + ": expected a CSV header row (the file holds only blank lines)");
  EXPECT_EQ(error(""), file_ + ": expected a non-empty log (the file has 0 bytes)");
  EXPECT_HAS(error("step,loss\n"), "never appears");
  // The step column named as a series too: its values would be their own steps.
  EXPECT_EQ(error("step,loss\n0,1\n", {{"loss", "loss"}, {"steps", "step"}}),
            file_ + ": column 'step': expected a metric column other than the step column 'step' (the step key "
                    "names it too)");
}

TEST_F(Csv, BadRows) {
  EXPECT_EQ(error("step,loss\n0,1\n1,2,3\n"), file_ + ": line 3: expected 2 cells, as in the header; got 3");
  EXPECT_EQ(error("step,loss\n0,1\nx,2\n"),
            file_ + ": line 3: column 'step': expected a non-negative integer step, got \"x\"");
  EXPECT_EQ(error("step,loss\n0,1\n1,abc\n"),
            file_ + ": line 3: column 'loss': expected a number (or nan, inf, -inf, Infinity in any case, or an empty cell), got "
                    "\"abc\"");
}

TEST_F(Csv, StepRules) {
  EXPECT_EQ(error("step,loss\n0,1\n2,2\n1,3\n"),
            file_ + ": line 4: column 'loss': expected steps in increasing order; step 1 comes after step 2 (line 3)");
  EXPECT_EQ(read("step,loss\n0,1\n0,1\n1,2\n").at("loss").values, (std::vector<double>{1, 2}));
  EXPECT_EQ(error("step,loss\n0,1\n0,1.5\n"),
            file_ + ": line 3: column 'loss': expected one value per step; step 0 is logged twice with different "
                    "values: 1 at line 2, 1.5 here");
  EXPECT_EQ(error("step,loss\n0,1\n1,1\n3,1\n"),
            file_ + ": line 4: column 'loss': expected step 2 before step 3: the steps go every 1 step from step 0, "
                    "and step 2 is missing");
  Series s = read("step,loss\n100,1\n200,2\n300,3\n").at("loss");
  EXPECT_EQ(s.steps, (std::vector<int64_t>{100, 200, 300}));
}

}  // namespace
}  // namespace lockstep

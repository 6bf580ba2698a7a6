// The readers of other tools' goldens, on files written here in the peers'
// own shapes: Megatron-LM golden values (string step keys, "nan", the
// older list form, value_precision), a torchtitan loss file, Hugging Face
// Trainer's trainer_state.json with eval entries mixed in; and their
// refusals, each naming the file and the line or key.
#include "ingest/peer_goldens.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ingest/ingest_test_util.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

class PeerGoldens : public ::testing::Test {
 protected:
  IngestTempDir dir_{"peer-goldens"};
  std::string file_ = dir_.path("golden");
  std::map<std::string, Series> read(MetricsFormat format, const std::string& text,
                                     std::map<std::string, std::string> series) {
    write_bytes(file_, text);
    MetricsSpec spec;
    spec.format = format;
    spec.path = file_;
    spec.series = std::move(series);
    return read_metrics(spec);
  }
  std::string error(MetricsFormat format, const std::string& text, std::map<std::string, std::string> series) {
    return exit2_message([&] { read(format, text, series); });
  }
};

TEST_F(PeerGoldens, MegatronGoldenValuesByStringStep) {
  auto s = read(MetricsFormat::kMegatron, R"({
    "lm loss": {"start_step": 1, "end_step": 12, "step_interval": 1,
                "values": {"1": 10.96455, "2": 10.9614, "10": 10.5, "3": 10.95, "4": 10.9, "5": "nan",
                           "6": 10.8, "7": 10.7, "8": 10.6, "9": 10.55, "11": 10.4, "12": 10}},
    "num-zeros": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"1": 0, "2": 3}},
    "iteration-time": {"start_step": 1, "end_step": 1, "step_interval": 1, "values": {"1": 1.5}}})",
                {{"loss", "lm loss"}, {"zeros", "num-zeros"}});
  const Series& loss = s.at("loss");
  // "nan" is Megatron's "not logged": step 5 is absent, not a NaN value.
  ASSERT_EQ(loss.values.size(), 11u);
  EXPECT_EQ(loss.values[0], 10.96455);
  EXPECT_EQ(loss.steps, (std::vector<int64_t>{1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12}));
  for (double v : loss.values) EXPECT_FALSE(std::isnan(v));
  EXPECT_EQ(loss.values[8], 10.5);  // "10" is step 10, after "9"
  EXPECT_EQ(s.at("zeros").values, (std::vector<double>{0, 3}));
}

// A file an editor saved with a UTF-8 byte-order mark reads as without it,
// as lockstep's own JSON files do; the mark anywhere else is no JSON.
TEST_F(PeerGoldens, AByteOrderMarkBeforeTheJsonIsSkipped) {
  const std::string golden = R"({"lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"1": 1.5, "2": 1.25}}})";
  auto s = read(MetricsFormat::kMegatron, "\xEF\xBB\xBF" + golden, {{"loss", "lm loss"}});
  EXPECT_EQ(s.at("loss").values, (std::vector<double>{1.5, 1.25}));
  EXPECT_HAS(error(MetricsFormat::kMegatron, " \xEF\xBB\xBF" + golden, {{"loss", "lm loss"}}), "(byte 1): expected valid JSON");
  auto hf = read(MetricsFormat::kHfTrainer, "\xEF\xBB\xBF{\"log_history\": [{\"step\": 1, \"loss\": 2.5}]}", {{"loss", "loss"}});
  EXPECT_EQ(hf.at("loss").values, (std::vector<double>{2.5}));
  // A byte a message names counts from the file's first byte, the mark's too.
  const std::string twice = R"({"lm loss": {"values": {"1": 1, "1": 1}}})";
  EXPECT_HAS(error(MetricsFormat::kMegatron, twice, {{"loss", "lm loss"}}), "written twice, at byte 24 and byte 32");
  EXPECT_HAS(error(MetricsFormat::kMegatron, "\xEF\xBB\xBF" + twice, {{"loss", "lm loss"}}),
             "written twice, at byte 27 and byte 35");
}

// Values that stop an interval or more short of end_step are a golden cut
// short; end_step one interval past the last value is Megatron-LM's own.
TEST_F(PeerGoldens, MegatronValuesMustReachEndStep) {
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"start_step": 0, "end_step": 10, "step_interval": 1, "values": [1, 2, 3]}})",
                   {{"loss", "lm loss"}}),
             "lm loss.values: expected values up to end_step 10 (every 1 step(s) from start_step 0); they stop at step 2");
  EXPECT_HAS(error(MetricsFormat::kMegatron,
                   R"({"lm loss": {"start_step": 1, "end_step": 9, "step_interval": 1, "values": {"1": 1, "2": 2}}})",
                   {{"loss", "lm loss"}}),
             "they stop at step 2");
  auto s = read(MetricsFormat::kMegatron,
                R"({"lm loss": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [1.5, 1.25]}})",
                {{"loss", "lm loss"}});
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{0, 5}));
}

// Megatron-LM writes every step_interval-th step from start_step, "nan"
// where none was logged: a step missing at the start or between, or off
// the grid, is refused naming the key.
TEST_F(PeerGoldens, MegatronStepsMustFollowStartStepAndInterval) {
  EXPECT_HAS(error(MetricsFormat::kMegatron,
                   R"({"lm loss": {"start_step": 1, "end_step": 5, "step_interval": 1, "values": {"4": 1, "5": 2}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": lm loss.values.4: expected the first value at start_step 1 (Megatron-LM writes every step from "
                     "start_step, \"nan\" where none was logged), got step 4");
  EXPECT_HAS(error(MetricsFormat::kMegatron,
                   R"({"lm loss": {"start_step": 1, "end_step": 31, "step_interval": 1, "values": {"1": 1, "11": 2, "21": 3, "31": 4}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": lm loss.values.11: expected step 2 next (every 1 step(s) from start_step 1, \"nan\" where none "
                     "was logged), got step 11");
  EXPECT_HAS(error(MetricsFormat::kMegatron,
                   R"({"lm loss": {"start_step": 1, "end_step": 11, "step_interval": 5, "values": {"1": 1, "7": 2, "11": 3}}})",
                   {{"loss", "lm loss"}}),
             "lm loss.values.7: expected step 6 next");
  auto s = read(MetricsFormat::kMegatron,
                R"({"lm loss": {"start_step": 1, "end_step": 11, "step_interval": 5, "values": {"1": 1, "6": "nan", "11": 3}}})",
                {{"loss", "lm loss"}});
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{1, 11}));  // step 6 not logged
  // From step 0, a hole keeps every step where it is: the values after it
  // never slide onto the step before (Series::steps empty means 0..n-1).
  auto from0 = read(MetricsFormat::kMegatron,
                    R"({"lm loss": {"start_step": 0, "end_step": 4, "step_interval": 1,
                                     "values": {"0": 1, "1": 2, "2": "nan", "3": 4, "4": 5}}})",
                    {{"loss", "lm loss"}});
  EXPECT_EQ(from0.at("loss").values, (std::vector<double>{1, 2, 4, 5}));
  EXPECT_EQ(from0.at("loss").steps, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(s.at("loss").not_logged, std::vector<int64_t>{6});
  EXPECT_EQ(s.at("loss").not_logged_count, 1u);
  EXPECT_HAS(error(MetricsFormat::kMegatron,
                   R"({"lm loss": {"start_step": 1, "end_step": 2, "step_interval": 1, "values": {"1": "nan", "2": "nan"}}})",
                   {{"loss", "lm loss"}}),
             "lm loss.values: expected at least one logged value; every step of the block is \"nan\" (not logged)");
}

// An integer beyond 64 bits is valid JSON that simdjson does not read: the
// byte is named.
TEST_F(PeerGoldens, AnIntegerTooLongToReadIsNamedByItsByte) {
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 123456789012345678901234567890}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": byte 29: expected a number lockstep can read: an integer from -2^63 to 2^64 - 1, or a "
                     "float (1.5e29), not 123456789012345678901234567890}}}");
}

TEST_F(PeerGoldens, MegatronOlderListsRunFromStartStepByInterval) {
  auto s = read(MetricsFormat::kMegatron,
                R"({"lm loss": {"start_step": 0, "end_step": 10, "step_interval": 5, "values": [10.8, 10.5, 10.1]}})",
                {{"loss", "lm loss"}});
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{0, 5, 10}));
  EXPECT_EQ(s.at("loss").values, (std::vector<double>{10.8, 10.5, 10.1}));
}

TEST_F(PeerGoldens, MegatronRefusalsNameTheKey) {
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"one": 1}}})", {{"loss", "lm loss"}}),
             "a value under a decimal step key (plain digits), not 'one'");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": "x"}}})", {{"loss", "lm loss"}}),
             "a number or \"nan\"");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1, "01": 2}}})", {{"loss", "lm loss"}}),
             "one value for step 1");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"end_step": 1, "values": {"1": 1, "2": 2}}})",
                   {{"loss", "lm loss"}}),
             "a step at most end_step 1");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1}, "precision": 5}})", {{"loss", "lm loss"}}),
             "precision");
  std::string missing = error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1}}})", {{"loss", "lm-loss"}});
  EXPECT_HAS(missing, "lm-loss");
  EXPECT_HAS(missing, file_);
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1})", {{"loss", "lm loss"}}), file_);
  // A key written twice, even with the same value, is ambiguous: refused with its path.
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1, "1": 1}}})", {{"loss", "lm loss"}}),
             file_ + ": lm loss.values.1: expected each key once; it is written twice, at byte");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 2.3, "step": 1, "loss": 2.3}]})",
                   {{"loss", "loss"}}),
             "it is written twice");
}

TEST_F(PeerGoldens, TorchtitanLossFile) {
  auto s = read(MetricsFormat::kTorchtitan, "1 10.8232\n2 10.512\n3 9.9\n\n4 9.75\n", {{"loss", "loss"}});
  EXPECT_EQ(s.at("loss").values, (std::vector<double>{10.8232, 10.512, 9.9, 9.75}));
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8\n2\n", {{"loss", "loss"}}), "line 2");
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8\n2 abc\n", {{"loss", "loss"}}), "a number after the step, got 'abc'");
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8\nx 1.0\n", {{"loss", "loss"}}), "a decimal step first, got 'x'");
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8\n1 10.9\n", {{"loss", "loss"}}), "line 2");
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8 3\n", {{"loss", "loss"}}), "(two fields)");
  EXPECT_THROW(read(MetricsFormat::kTorchtitan, "1 10.8\n", {{"loss", "loss"}, {"b", "b"}}), Error);
  // Blanks: spaces and tabs around and between the fields, CRLF lines, a
  // line of blanks and a CR skipped; a CR inside a line is a file of "\r"
  // endings, said so.
  auto blanks = read(MetricsFormat::kTorchtitan, "  1\t 10.5  \r\n \t\r\n2 9.5\t\r\n", {{"loss", "loss"}});
  EXPECT_EQ(blanks.at("loss").values, (std::vector<double>{10.5, 9.5}));
  EXPECT_EQ(blanks.at("loss").steps, (std::vector<int64_t>{1, 2}));
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 \r\n", {{"loss", "loss"}}), "line 1: expected \"<step> <loss>\" (two fields)");
  for (const char* cr_inside : {"1\r2 3\n", "1 2\r3\n"})
    EXPECT_HAS(error(MetricsFormat::kTorchtitan, cr_inside, {{"loss", "loss"}}),
               "line 1: expected lines ending in \"\\n\" or \"\\r\\n\", got \"\\r\" alone");
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 0x1p3\n", {{"loss", "loss"}}), "a number after the step, got '0x1p3'");
  // Cut mid-line: "1.125" cut to "1.1" would parse; the missing newline says so.
  EXPECT_HAS(error(MetricsFormat::kTorchtitan, "1 10.8\n2 1.1", {{"loss", "loss"}}),
             file_ + ": line 2: expected a line ending in a newline; the file ends mid-line");
}

TEST_F(PeerGoldens, HuggingFaceTrainerStateWithEvalEntriesMixedIn) {
  auto s = read(MetricsFormat::kHfTrainer, R"({"best_metric": null, "global_step": 30, "log_history": [
      {"epoch": 0.1, "grad_norm": 1.5, "learning_rate": 5e-05, "loss": 2.3012, "step": 10},
      {"epoch": 0.1, "eval_loss": 2.2, "eval_runtime": 1.0, "step": 10},
      {"epoch": 0.2, "grad_norm": 1.4, "learning_rate": 4e-05, "loss": 2.25, "step": 20},
      {"epoch": 0.3, "grad_norm": 1.3, "learning_rate": 3e-05, "loss": 2.2, "step": 30},
      {"train_runtime": 12.5, "total_flos": 1e12, "step": 30}]})",
                {{"loss", "loss"}, {"grad_norm", "grad_norm"}, {"eval", "eval_loss"}});
  EXPECT_EQ(s.at("loss").values, (std::vector<double>{2.3012, 2.25, 2.2}));
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(s.at("grad_norm").values, (std::vector<double>{1.5, 1.4, 1.3}));
  EXPECT_EQ(s.at("eval").values, (std::vector<double>{2.2}));
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 2.3}]})", {{"loss", "loss"}}),
             "log_history[0]");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": "x", "step": 1}]})", {{"loss", "loss"}}),
             "a number or \"nan\"");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer,
                   R"({"log_history": [{"loss": 2.3, "step": 10}, {"loss": 2.4, "step": 10}]})", {{"loss", "loss"}}),
             "step 10");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"global_step": 3})", {{"loss", "loss"}}), "log_history");
}

// The precision guard: values a source rounded to 4 decimals (Hugging
// Face's Trainer until late 2025) are marked so; Megatron's "full" blocks
// never are; full-precision curves are not.
TEST_F(PeerGoldens, RoundedValuesAreMarkedWithTheirGrid) {
  std::string history = R"({"log_history": [)";
  const double losses[] = {2.3012, 2.2987, 2.2951, 2.2903, 2.2876, 2.2811, 2.2799, 2.2741, 2.2702};
  for (int i = 0; i < 9; ++i)
    history += std::string(i ? ", " : "") + "{\"loss\": " + std::to_string(losses[i]).substr(0, 6) + ", \"step\": " +
               std::to_string((i + 1) * 10) + "}";
  history += "]}";
  auto s = read(MetricsFormat::kHfTrainer, history, {{"loss", "loss"}});
  EXPECT_EQ(s.at("loss").rounded, 1e-4);
  std::string values;
  for (int i = 0; i < 9; ++i) values += std::string(i ? ", " : "") + "\"" + std::to_string(i + 1) + "\": " + std::to_string(10.96455 - 0.01237 * i).substr(0, 8);
  auto legacy = read(MetricsFormat::kMegatron, "{\"lm loss\": {\"values\": {" + values + "}}}", {{"loss", "lm loss"}});
  EXPECT_EQ(legacy.at("loss").rounded, 1e-5);
  auto full = read(MetricsFormat::kMegatron, "{\"lm loss\": {\"value_precision\": \"full\", \"values\": {" + values + "}}}",
                   {{"loss", "lm loss"}});
  EXPECT_EQ(full.at("loss").rounded, 0);
  auto exact = read(MetricsFormat::kTorchtitan,
                    "1 2.301234567891\n2 2.298765432198\n3 2.295123456789\n4 2.290312345678\n5 2.287612345671\n"
                    "6 2.281112345679\n7 2.279912345673\n8 2.274112345672\n",
                    {{"loss", "loss"}});
  EXPECT_EQ(exact.at("loss").rounded, 0);
}

// The readers walk the file once, in order, keeping no tree of it: a
// block's values before its start_step, a trainer_state.json entry's step
// after its values, and log_history before or after the other keys read
// as anywhere else; what they step over is still checked.
TEST_F(PeerGoldens, FieldsInAnyOrderAndWhatIsSteppedOverIsChecked) {
  auto s = read(MetricsFormat::kMegatron,
                R"({"num-zeros": {"values": [0, 1], "start_step": 4},
                    "lm loss": {"values": {"4": 1.5, "5": 1.25}, "end_step": 5, "start_step": 4}})",
                {{"loss", "lm loss"}});
  EXPECT_EQ(s.at("loss").steps, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(s.at("loss").values, (std::vector<double>{1.5, 1.25}));
  // Keys out of order with the values before the keys' sort.
  auto sorted = read(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"2": 2.5, "1": 1.5, "3": "nan", "4": 4.5}}})",
                     {{"loss", "lm loss"}});
  EXPECT_EQ(sorted.at("loss").steps, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(sorted.at("loss").values, (std::vector<double>{1.5, 2.5, 4.5}));
  // A metric not asked for is read to its end: a bad literal in it is refused by its byte.
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"other": {"values": {"1": tru}}, "lm loss": {"values": {"1": 1}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": line 1, column 28 (byte 27): expected valid JSON (syntax error in a value: invalid literal)");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": 1}}, "lm loss": {"values": {"1": 1}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": lm loss: expected each key once; it is written twice, at byte 1 and byte 34");
  // A step key with an escape is not taken for a step: named as written.
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"\u0031": 1}}})", {{"loss", "lm loss"}}),
             "lm loss.values.\\u0031: expected a value under a decimal step key (plain digits), not '\\u0031'");

  auto hf = read(MetricsFormat::kHfTrainer,
                 R"({"log_history": [{"loss": 2.5, "epoch": 0.1, "step": 10}, {"step": 20, "loss": "nan"}],
                     "best_model_checkpoint": null, "trial_params": {"lr": [1e-4, {"x": true}]}})",
                 {{"loss", "loss"}});
  EXPECT_EQ(hf.at("loss").steps, (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(hf.at("loss").values[0], 2.5);
  EXPECT_TRUE(std::isnan(hf.at("loss").values[1]));
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 2.5, "step": "10"}]})", {{"loss", "loss"}}),
             file_ + ": log_history[0].step: expected an integer between 0 and 4503599627370496, got a string");
  // An entry that logs nothing asked for needs no step.
  auto eval = read(MetricsFormat::kHfTrainer, R"({"log_history": [{"eval_loss": 2.5, "step": "x"}, {"loss": 1.5, "step": 3}]})",
                   {{"loss", "loss"}});
  EXPECT_EQ(eval.at("loss").steps, (std::vector<int64_t>{3}));
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 2.5, "step": 1}], "x": [1, 2,]})",
                   {{"loss", "loss"}}),
             file_ + ": line 1, column 56 (byte 55): expected valid JSON");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": {"loss": 2.5}})", {{"loss", "loss"}}),
             file_ + ": log_history: expected an array, got an object");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"([{"loss": 2.5}])", {{"loss", "loss"}}),
             file_ + ": (top level): expected an object");
}

// Numbers as Python writes them with any number of digits read as Python
// reads them; what no reader should guess at is refused, naming the key or
// the byte.
TEST_F(PeerGoldens, LongNumbersReadExactlyAndGuessesAreRefused) {
  auto m = read(MetricsFormat::kMegatron,
                R"({"lm loss": {"start_step": 5.0000000000000000000, "step_interval": 2,
                                 "values": [1.234567890123456789, 2.50000000000000000000, 1.0000000000000000000e5]}})",
                {{"loss", "lm loss"}});
  EXPECT_EQ(m.at("loss").values, (std::vector<double>{1.2345678901234567, 2.5, 1e5}));
  EXPECT_EQ(m.at("loss").steps, (std::vector<int64_t>{5, 7, 9}));
  auto hf = read(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 3.14159265358979323846, "step": 30.0000000000000000000}]})",
                 {{"loss", "loss"}});
  EXPECT_EQ(hf.at("loss").values, (std::vector<double>{3.141592653589793}));
  EXPECT_EQ(hf.at("loss").steps, (std::vector<int64_t>{30}));
  auto fractions = read(MetricsFormat::kHfTrainer,
                        R"({"log_history": [{"loss": 0.500000000000000000000, "step": 0.300000000000000000000e2},
                                            {"loss": 1e00000000000000000001, "step": 31}, {"loss": 1e-999999999999999999999, "step": 32}]})",
                        {{"loss", "loss"}});
  EXPECT_EQ(fractions.at("loss").values, (std::vector<double>{0.5, 10.0, 0.0}));
  EXPECT_EQ(fractions.at("loss").steps, (std::vector<int64_t>{30, 31, 32}));
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": 1, "step": 10}], "x": -9223372036854775809})",
                   {{"loss", "loss"}}),
             file_ + ": byte 48: expected a number lockstep can read: an integer from -2^63 to 2^64 - 1, or a float");
  // A list's steps come from start_step and step_interval: neither is guessed.
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"step_interval": 1, "values": [1, "nan", 3]}})", {{"loss", "lm loss"}}),
             file_ + ": lm loss.start_step: expected a value: a list of values runs from start_step by step_interval");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"start_step": 0, "values": [1, 3]}})", {{"loss", "lm loss"}}),
             file_ + ": lm loss.step_interval: expected a value");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"4503599627370497": 1.5}}})", {{"loss", "lm loss"}}),
             file_ + ": lm loss.values.4503599627370497: expected a step of at most 2^52, got 4503599627370497");
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"2": 1, "1000000000000000000": 1.5}}})",
                   {{"loss", "lm loss"}}),
             file_ + ": lm loss.values.1000000000000000000: expected a step of at most 2^52, got 1000000000000000000");
  // A malformed literal where a value of another kind belongs is malformed JSON first.
  EXPECT_HAS(error(MetricsFormat::kMegatron, R"({"lm loss": {"values": tru}})", {{"loss", "lm loss"}}),
             "(byte 23): expected valid JSON (syntax error in a value: invalid literal)");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [nul]})", {{"loss", "loss"}}),
             "(byte 17): expected valid JSON (syntax error in a value: invalid literal)");
  // An entry's values count their depth from the root: 256 levels in all
  // (the root, log_history, the entry, then 254 arrays).
  std::string deep = std::string(254, '[') + std::string(254, ']');
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"x": )" + deep + R"(, "loss": 1, "step": 1}]})",
                   {{"loss", "loss"}}),
             "arrays and objects nested at most 256 deep");
}

// Python's json.dumps writes a NaN or infinite float bare (a grad_norm
// that overflowed in trainer_state.json): a value there, and every byte a
// later message names is still the file's.
TEST_F(PeerGoldens, BareNaNAndInfinityAreValues) {
  auto hf = read(MetricsFormat::kHfTrainer,
                 "{\"log_history\": [{\"grad_norm\": NaN, \"loss\": 2.5, \"step\": 1},\n"
                 "  {\"grad_norm\": Infinity, \"loss\": -Infinity, \"step\": 2, \"note\": \"NaN\"}]}",
                 {{"loss", "loss"}, {"g", "grad_norm"}});
  EXPECT_TRUE(std::isnan(hf.at("g").values[0]));
  EXPECT_EQ(hf.at("g").values[1], INFINITY);
  EXPECT_EQ(hf.at("loss").values, (std::vector<double>{2.5, -INFINITY}));
  auto m = read(MetricsFormat::kMegatron, R"({"lm loss": {"values": {"1": NaN, "2": "nan", "3": 1.5}}})", {{"loss", "lm loss"}});
  EXPECT_EQ(m.at("loss").steps, (std::vector<int64_t>{1, 3}));  // "nan" is not logged; NaN is a value
  EXPECT_TRUE(std::isnan(m.at("loss").values[0]));
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": NaN, "step": 1}, {"loss": NaNa}]})", {{"loss", "loss"}}),
             file_ + ": line 1, column 53 (byte 52): expected valid JSON (syntax error in a value: invalid literal)");
  EXPECT_HAS(error(MetricsFormat::kHfTrainer, R"({"log_history": [{"loss": -Infinity, "step": 1}], "a": 1, "a": 2})",
                   {{"loss", "loss"}}),
             "written twice, at byte 50 and byte 58");
}

TEST(DecimalGrid, TheCoarsestGridWithEnoughDistinctValues) {
  EXPECT_EQ(decimal_grid({0.12, 0.34, 0.56, 0.78, 0.9, 1.02, 1.14, 1.26}, false), 1e-2);
  EXPECT_EQ(decimal_grid({0.12, 0.34, 0.56}, false), 0);  // three values prove nothing
  EXPECT_EQ(decimal_grid({0, 3, 7, 12, 15, 20, 31, 44, 52}, false), 0);  // whole numbers: a count, exact
  std::vector<double> f32;  // float32 of 4-decimal values still sit on the grid
  for (double v : {2.3012, 2.2987, 2.2951, 2.2903, 2.2876, 2.2811, 2.2799, 2.2741})
    f32.push_back(static_cast<double>(static_cast<float>(v)));
  EXPECT_EQ(decimal_grid(f32, true), 1e-4);
  EXPECT_EQ(decimal_grid(f32, false), 0);  // as float64, those are not on it
  // A linear lr schedule, 1e-4 * (1 - s/20): multiples of 5e-6 within
  // 1e-10, but computed, not written rounded (7.500000000000001e-05).
  std::vector<double> lr;
  for (int step = 0; step < 20; ++step) lr.push_back(1e-4 * (1 - step / 20.0));
  EXPECT_EQ(decimal_grid(lr, false), 0);
  std::vector<double> written;  // the same schedule as a source that rounds writes it
  for (int step = 0; step < 20; ++step) written.push_back(std::round(lr[static_cast<size_t>(step)] * 1e6) / 1e6);
  EXPECT_EQ(decimal_grid(written, false), 1e-6);
  // float32 values of 10 cannot show a 1e-5 grid (its ulp there is 1e-6).
  std::vector<double> big;
  for (int i = 0; i < 8; ++i) big.push_back(static_cast<double>(static_cast<float>(10.96455 - 0.01237 * i)));
  EXPECT_EQ(decimal_grid(big, true), 0);
}

}  // namespace
}  // namespace lockstep

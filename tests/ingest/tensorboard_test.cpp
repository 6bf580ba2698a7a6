#include "ingest/tensorboard.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <string>
#include <vector>

#include "ingest/crc32c.h"
#include "ingest/ingest_test_util.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

MetricsSpec tb_spec(const std::string& path, std::map<std::string, std::string> series = {{"loss", "train/loss"}}) {
  MetricsSpec spec;
  spec.format = MetricsFormat::kTensorBoard;
  spec.path = path;
  spec.series = std::move(series);
  return spec;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

#define EXPECT_HAS(text, part) EXPECT_TRUE(has(text, part)) << "missing \"" << (part) << "\" in: " << (text)

TEST(TensorBoard, SimpleValuesKeepFloat32BitsExactly) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 0.1f).scalar(1, "train/loss", 2.5f).scalar(2, "train/loss", -3.0e-8f);
  f.write(dir.path("events.out.tfevents.1700000000.host"));
  auto out = read_metrics(tb_spec(dir.path()));
  ASSERT_EQ(out.size(), 1u);
  const Series& s = out.at("loss");
  EXPECT_EQ(s.dtype, Series::Dtype::kFloat32);
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_EQ(s.values[0], 0.100000001490116119384765625);  // 0.1f exactly, not 0.1
  EXPECT_NE(s.values[0], 0.1);
  EXPECT_EQ(s.values[1], 2.5);
  EXPECT_EQ(s.values[2], static_cast<double>(-3.0e-8f));
  EXPECT_TRUE(s.steps.empty());  // exactly 0, 1, 2
}

TEST(TensorBoard, ScalarTensorsFromValListsAndTensorContent) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  for (int step = 0; step < 2; ++step) {
    f.tensor_float(step, "a", 0.25f + static_cast<float>(step), false);
    f.tensor_float(step, "b", 1.0f / 3.0f, true);
    f.tensor_double(step, "c", 0.1 * (step + 1), false);
    f.tensor_double(step, "d", 1.0 / 3.0, true, /*shape11=*/true);
  }
  f.write(dir.path("events.out.tfevents.1"));
  auto out = read_metrics(tb_spec(dir.path(), {{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}}));
  EXPECT_EQ(out.at("a").dtype, Series::Dtype::kFloat32);
  EXPECT_EQ(out.at("a").values, (std::vector<double>{0.25, 1.25}));
  EXPECT_EQ(out.at("b").dtype, Series::Dtype::kFloat32);
  EXPECT_EQ(out.at("b").values, (std::vector<double>{0.3333333432674407958984375, 0.3333333432674407958984375}));
  EXPECT_EQ(out.at("c").dtype, Series::Dtype::kFloat64);
  EXPECT_EQ(out.at("c").values, (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(out.at("d").dtype, Series::Dtype::kFloat64);
  EXPECT_EQ(out.at("d").values, (std::vector<double>{1.0 / 3.0, 1.0 / 3.0}));
}

TEST(TensorBoard, OneFileMayBeNamedAndTwoSeriesMayReadOneTag) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "x", 1.0f).scalar(1, "x", 2.0f);
  f.write(dir.path("my.events"));
  auto out = read_metrics(tb_spec(dir.path("my.events"), {{"p", "x"}, {"q", "x"}}));
  EXPECT_EQ(out.at("p").values, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(out.at("q").values, (std::vector<double>{1.0, 2.0}));
}

TEST(TensorBoard, EveryFifthStepKeepsItsStepNumbers) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  for (int step = 0; step <= 15; step += 5) f.scalar(step, "train/loss", static_cast<float>(step));
  f.write(dir.path("events.out.tfevents.1"));
  Series s = read_metrics(tb_spec(dir.path())).at("loss");
  EXPECT_EQ(s.values, (std::vector<double>{0, 5, 10, 15}));
  EXPECT_EQ(s.steps, (std::vector<int64_t>{0, 5, 10, 15}));
}

TEST(TensorBoard, StepsFromOneAreKept) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(1, "train/loss", 1.0f).scalar(2, "train/loss", 2.0f).scalar(3, "train/loss", 3.0f);
  f.write(dir.path("events.out.tfevents.1"));
  EXPECT_EQ(read_metrics(tb_spec(dir.path())).at("loss").steps, (std::vector<int64_t>{1, 2, 3}));
}

TEST(TensorBoard, OtherTagsAndKindsAreSkipped) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  tb::Event h = TbFile::summary_event(0);
  auto* v = h.mutable_summary()->add_value();
  v->set_tag("weights/hist");
  v->set_histo(std::string("\x09\0\0\0\0\0\0\0\0", 9));  // HistogramProto{min: 0}
  f.event(h);
  tb::Event graph;
  graph.set_graph_def("not read");
  f.event(graph);
  f.scalar(0, "train/loss", 1.5f).scalar(0, "other", 7.0f).scalar(1, "train/loss", 0.5f);
  f.write(dir.path("events.out.tfevents.1"));
  EXPECT_EQ(read_metrics(tb_spec(dir.path())).at("loss").values, (std::vector<double>{1.5, 0.5}));
}

TEST(TensorBoard, FolderReadsOnlyEventFilesSortedByName) {
  IngestTempDir dir("tb");
  TbFile later, earlier;
  later.version().scalar(2, "train/loss", 3.0f).scalar(3, "train/loss", 4.0f);
  earlier.version().scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 2.0f);
  later.write(dir.path("events.out.tfevents.1700000200.host"));
  earlier.write(dir.path("events.out.tfevents.1700000100.host"));
  write_bytes(dir.path("notes.txt"), "not an event file");
  EXPECT_EQ(read_metrics(tb_spec(dir.path())).at("loss").values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(tensorboard_event_files(dir.path()),
            (std::vector<std::string>{dir.path("events.out.tfevents.1700000100.host"),
                                      dir.path("events.out.tfevents.1700000200.host")}));
}

// An event file's name on something that is not a file is refused, not
// skipped: its events would be lost without a word.
TEST(TensorBoard, AnEventNameOnSomethingElseIsRefused) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f);
  f.write(dir.path("events.out.tfevents.1"));
  std::filesystem::create_directories(dir.path("events.out.tfevents.2"));
  EXPECT_EQ(exit2_message([&] { read_metrics(tb_spec(dir.path())); }),
            dir.path("events.out.tfevents.2") +
                ": expected a regular TensorBoard event file (named events.out.tfevents.*), got a folder");
  std::filesystem::remove(dir.path("events.out.tfevents.2"));
  ASSERT_EQ(::mkfifo(dir.path("events.out.tfevents.3").c_str(), 0600), 0);
  EXPECT_HAS(exit2_message([&] { read_metrics(tb_spec(dir.path())); }), "got a FIFO");
  std::filesystem::remove(dir.path("events.out.tfevents.3"));
  std::filesystem::create_symlink("/dev/zero", dir.path("events.out.tfevents.4"));
  EXPECT_HAS(exit2_message([&] { read_metrics(tb_spec(dir.path())); }), "got a device or a socket, or a link to one");
  std::filesystem::remove(dir.path("events.out.tfevents.4"));
  std::filesystem::create_symlink(dir.path("events.out.tfevents.1"), dir.path("events.out.tfevents.5"));
  EXPECT_EQ(tensorboard_event_files(dir.path()).size(), 2u);  // a link to an event file is one
}

TEST(TensorBoard, RestartReLoggingIdenticalValuesIsAccepted) {
  IngestTempDir dir("tb");
  TbFile first, second;
  first.version();
  second.version();
  for (int step = 0; step <= 5; ++step) first.scalar(step, "train/loss", 1.0f / static_cast<float>(step + 1));
  for (int step = 4; step <= 8; ++step) second.scalar(step, "train/loss", 1.0f / static_cast<float>(step + 1));
  first.write(dir.path("events.out.tfevents.1"));
  second.write(dir.path("events.out.tfevents.2"));
  Series s = read_metrics(tb_spec(dir.path())).at("loss");
  ASSERT_EQ(s.values.size(), 9u);
  for (int step = 0; step <= 8; ++step)
    EXPECT_EQ(s.values[static_cast<size_t>(step)], static_cast<double>(1.0f / static_cast<float>(step + 1)));
  EXPECT_TRUE(s.steps.empty());
}

TEST(TensorBoard, RestartReLoggingAnotherValueNamesBothFiles) {
  IngestTempDir dir("tb");
  TbFile first, second;
  first.version().scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 0.5f);
  second.version().scalar(1, "train/loss", 0.25f).scalar(2, "train/loss", 0.125f);
  first.write(dir.path("events.out.tfevents.1"));
  second.write(dir.path("events.out.tfevents.2"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + " (byte " + std::to_string(first.offset(2)) + ")");
  EXPECT_HAS(msg, dir.path("events.out.tfevents.2") + ": byte " + std::to_string(second.offset(1)));
  EXPECT_HAS(msg, "tag 'train/loss'");
  EXPECT_HAS(msg, "step 1");
  EXPECT_HAS(msg, "0.5");
  EXPECT_HAS(msg, "0.25");
}

TEST(TensorBoard, SameStepTwiceInOneFile) {
  IngestTempDir dir("tb");
  TbFile same, other;
  same.version().scalar(0, "train/loss", 1.0f).scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 2.0f);
  same.write(dir.path("same.events"));
  EXPECT_EQ(read_metrics(tb_spec(dir.path("same.events"))).at("loss").values, (std::vector<double>{1, 2}));
  other.version().scalar(0, "train/loss", 1.0f).scalar(0, "train/loss", 3.0f);
  other.write(dir.path("other.events"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path("other.events"))); });
  EXPECT_HAS(msg, dir.path("other.events") + ": byte " + std::to_string(other.offset(2)) + ": tag 'train/loss'");
  EXPECT_HAS(msg, "step 0 is logged twice with different values: 1 at byte " + std::to_string(other.offset(1)) +
                      ", 3 here");
}

TEST(TensorBoard, BadLengthCrc) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 2.0f);
  f.bytes()[f.offset(2) + 8] ^= 0x01;  // the length's CRC of the third record
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(2)) + ": expected");
  EXPECT_HAS(msg, "length CRC");
}

TEST(TensorBoard, BadDataCrc) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 2.0f);
  f.bytes()[f.offset(1) + 14] ^= 0x40;  // a data byte of the second record
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(1)) + ": expected");
  EXPECT_HAS(msg, "data CRC");
}

TEST(TensorBoard, TruncatedLastRecordNamesItsOffset) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).scalar(1, "train/loss", 2.0f);
  std::string whole = f.bytes();
  for (size_t cut : {size_t{3}, size_t{12}, whole.size() - f.offset(2) - 1}) {  // in the header, the data, the CRC
    write_bytes(dir.path("events.out.tfevents.1"), whole.substr(0, f.offset(2) + cut));
    std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
    EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(2)) + ": expected");
    EXPECT_HAS(msg, "truncated");
  }
}

TEST(TensorBoard, AbsurdLengthIsRefusedWithoutAllocating) {
  IngestTempDir dir("tb");
  std::string header(8, '\0');
  header[7] = 0x10;  // 2^60 bytes
  std::string record = header;
  uint32_t crc = masked_crc32c(header.data(), 8);
  for (int i = 0; i < 4; ++i) record += static_cast<char>((crc >> (8 * i)) & 0xff);
  record += "tiny";
  write_bytes(dir.path("events.out.tfevents.1"), record);
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, "byte 0");
  EXPECT_HAS(msg, "1152921504606846976 data bytes");
}

TEST(TensorBoard, RecordThatIsNotAnEvent) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  append_tfrecord(f.bytes(), std::string("\xff\xff\xff", 3));
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.bytes().size() - 19) +
                      ": expected a TensorBoard Event protobuf");
}

TEST(TensorBoard, MissingTagSuggestsTheClosest) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).scalar(0, "train/lr", 0.1f);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path(), {{"loss", "train/los"}})); });
  EXPECT_HAS(msg, dir.path() + ": tag 'train/los'");
  EXPECT_HAS(msg, "series loss");
  EXPECT_HAS(msg, "did you mean 'train/loss'?");
}

TEST(TensorBoard, OutOfOrderStepInOneFile) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).scalar(2, "train/loss", 2.0f).scalar(1, "train/loss", 3.0f);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_EQ(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(3)) +
                     ": tag 'train/loss': expected steps in increasing order; step 1 comes after step 2 (byte " +
                     std::to_string(f.offset(2)) + ")");
}

TEST(TensorBoard, MissingStepInTheMiddle) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  for (int step : {0, 1, 2, 4}) f.scalar(step, "train/loss", 1.0f);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_EQ(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(4)) +
                     ": tag 'train/loss': expected step 3 before step 4: the steps go every 1 step from step 0, and "
                     "step 3 is missing");
}

TEST(TensorBoard, OffGridStep) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  for (int step : {0, 5, 10, 12}) f.scalar(step, "train/loss", 1.0f);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, "tag 'train/loss': expected steps every 5 steps from step 0");
  EXPECT_HAS(msg, "got step 12 after step 10");
}

TEST(TensorBoard, HistogramUnderARequestedTag) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f);
  tb::Event h = TbFile::summary_event(1);
  auto* v = h.mutable_summary()->add_value();
  v->set_tag("train/loss");
  v->set_histo("");
  f.event(h);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_EQ(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(2)) +
                     ": tag 'train/loss': expected a scalar (simple_value, or a one-element DT_FLOAT or DT_DOUBLE "
                     "tensor); got a histogram");
}

TEST(TensorBoard, NonScalarTensorAndOtherDtypes) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  tb::Event e = TbFile::summary_event(0);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag("train/loss");
  auto* t = v->mutable_tensor();
  t->set_dtype(tb::DT_FLOAT);
  t->mutable_tensor_shape()->add_dim()->set_size(2);
  t->add_float_val(1.0f);
  t->add_float_val(2.0f);
  f.event(e);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(1)) + ": tag 'train/loss'");
  EXPECT_HAS(msg, "got a tensor of shape [2]");

  TbFile g;
  g.version();
  tb::Event i = TbFile::summary_event(0);
  auto* w = i.mutable_summary()->add_value();
  w->set_tag("train/loss");
  w->mutable_tensor()->set_dtype(static_cast<tb::DataType>(9));  // DT_INT64
  g.event(i).write(dir.path("events.out.tfevents.1"));
  msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, "tag 'train/loss'");
  EXPECT_HAS(msg, "got a tensor of dtype 9");
}

TEST(TensorBoard, DtypeMustNotChange) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(0, "train/loss", 1.0f).tensor_double(1, "train/loss", 2.0, false);
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": byte " + std::to_string(f.offset(2)) + ": tag 'train/loss'");
  EXPECT_HAS(msg, "float32 values, as at " + dir.path("events.out.tfevents.1") + " (byte " +
                      std::to_string(f.offset(1)) + "); got a float64 value at step 1");
}

TEST(TensorBoard, NegativeStep) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version().scalar(-1, "train/loss", 1.0f);
  f.write(dir.path("events.out.tfevents.1"));
  EXPECT_HAS(exit2_message([&] { read_metrics(tb_spec(dir.path())); }), "a non-negative step, got step -1");
}

TEST(TensorBoard, EmptyFileMissingPathAndFolderWithoutEvents) {
  IngestTempDir dir("tb");
  write_bytes(dir.path("events.out.tfevents.1"), "");
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path("events.out.tfevents.1") + ": expected");
  EXPECT_HAS(msg, "empty");
  std::filesystem::remove(dir.path("events.out.tfevents.1"));
  write_bytes(dir.path("notes.txt"), "x");
  msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, dir.path() + ": expected a folder holding TensorBoard event files");
  msg = exit2_message([&] { read_metrics(tb_spec(dir.path("nope"))); });
  EXPECT_HAS(msg, dir.path("nope") + ": expected");
  EXPECT_HAS(msg, "does not exist");
}

TEST(TensorBoard, FileWithoutRequestedData) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  f.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, "tag 'train/loss'");
  EXPECT_HAS(msg, "never appears");
}


// Files of more than a few thousand records are parsed by several threads
// (tensorboard.cpp, read_event_file): same values, and the error reported
// is still the first in the file.
TEST(TensorBoard, LargeFileParsedInParallelKeepsOrderAndFirstError) {
  IngestTempDir dir("tb");
  TbFile f;
  f.version();
  for (int step = 0; step < 30000; ++step) {
    f.scalar(step, "train/loss", static_cast<float>(step) * 0.5f);
    f.scalar(step, "train/lr", 1.0f / static_cast<float>(step + 1));
  }
  f.write(dir.path("events.out.tfevents.1"));
  auto out = read_metrics(tb_spec(dir.path(), {{"loss", "train/loss"}, {"lr", "train/lr"}}));
  ASSERT_EQ(out.at("loss").values.size(), 30000u);
  for (size_t i = 0; i < 30000; ++i) {
    ASSERT_EQ(out.at("loss").values[i], static_cast<double>(static_cast<float>(i) * 0.5f));
    ASSERT_EQ(out.at("lr").values[i], static_cast<double>(1.0f / static_cast<float>(i + 1)));
  }
  EXPECT_TRUE(out.at("loss").steps.empty());

  // An out-of-order step early, a histogram and a bad CRC later: the first wins.
  TbFile g;
  g.version();
  for (int step = 0; step < 30000; ++step) g.scalar(step == 5000 ? 4000 : step, "train/loss", 1.0f);
  tb::Event h = TbFile::summary_event(30000);
  h.mutable_summary()->add_value()->set_tag("train/loss");
  h.mutable_summary()->mutable_value(0)->set_histo("");
  g.event(h);
  g.bytes()[g.offset(29000) + 14] ^= 1;
  g.write(dir.path("events.out.tfevents.1"));
  std::string msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, ": byte " + std::to_string(g.offset(5001)) + ": tag 'train/loss': expected steps in increasing order");

  TbFile k;
  k.version();
  for (int step = 0; step < 30000; ++step) k.scalar(step, "train/loss", 1.0f);
  k.event(h);
  k.bytes()[k.offset(29000) + 14] ^= 1;
  k.write(dir.path("events.out.tfevents.1"));
  msg = exit2_message([&] { read_metrics(tb_spec(dir.path())); });
  EXPECT_HAS(msg, ": byte " + std::to_string(k.offset(29000)) + ": expected a record whose data CRC matches");
}

}  // namespace
}  // namespace lockstep

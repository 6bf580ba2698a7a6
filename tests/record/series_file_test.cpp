#include "record/series_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "../record_builder.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"
#include "record/golden.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// A fresh folder per test: sidecars are found by listing it.
std::string fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-sidecar-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::vector<std::string> sidecars_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".series") out.push_back(e.path().filename().string());
  return out;
}

// kInlineSeriesSteps + 1 steps: long enough for a sidecar. Values cover
// NaN, ±Inf, -0.0 and a denormal, which must come back with their bits.
RunRecord long_record(double scale = 1.0) {
  std::vector<double> loss(kInlineSeriesSteps + 1), grad(kInlineSeriesSteps + 1);
  for (size_t i = 0; i < loss.size(); ++i) {
    loss[i] = scale * std::exp(-1e-4 * static_cast<double>(i));
    grad[i] = scale / (1.0 + static_cast<double>(i));
  }
  RunRecord r = testing::make_record(loss, grad);
  Series& g = r.series["grad_norm"];
  g.values[1] = std::nan("");
  g.values[2] = INFINITY;
  g.values[3] = -INFINITY;
  g.values[4] = -0.0;
  g.values[5] = 4.9e-324;
  r.resources.step_time_s.assign(loss.size(), 0.125);
  r.resources.peak_rss_bytes = 1 << 20;
  return r;
}

uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

void expect_identical(const RunRecord& a, const RunRecord& b) {
  ASSERT_EQ(a.series.size(), b.series.size());
  for (const auto& [name, s] : a.series) {
    const Series& t = b.series.at(name);
    EXPECT_EQ(s.dtype, t.dtype) << name;
    ASSERT_EQ(s.values.size(), t.values.size()) << name;
    for (size_t i = 0; i < s.values.size(); ++i)
      ASSERT_EQ(bits(s.values[i]), bits(t.values[i])) << name << "[" << i << "]";
  }
  EXPECT_EQ(a.resources.step_time_s, b.resources.step_time_s);
}

TEST(SeriesFile, LongRecordRoundTripsThroughASidecarBitForBit) {
  std::string dir = fresh_dir("roundtrip");
  std::string path = dir + "/run.json";
  RunRecord r = long_record();
  write_run_record(path, r);

  std::vector<std::string> files = sidecars_in(dir);
  ASSERT_EQ(files.size(), 1u);
  // 3 arrays (loss, grad_norm, step times) of 10001 binary64 values.
  EXPECT_EQ(fs::file_size(dir + "/" + files[0]), 3u * 10001u * 8u);
  nlohmann::json doc = parse_json_file(path);
  EXPECT_EQ(doc["series_data"]["file"], files[0]);
  EXPECT_TRUE(is_sidecar_of(files[0], "run.json"));
  EXPECT_EQ(doc["series"]["loss"]["values"], (nlohmann::json{{"offset", 80008}, {"count", 10001}}));
  EXPECT_FALSE(doc["series"]["loss"].contains("bits"));

  expect_identical(r, read_run_record(path));
  expect_identical(r, read_golden_or_record(path).record);
}

TEST(SeriesFile, ShortRecordStaysOneJsonFile) {
  std::string dir = fresh_dir("short");
  write_run_record(dir + "/run.json", testing::make_record({1.0, 0.5}));
  EXPECT_TRUE(sidecars_in(dir).empty());
  EXPECT_FALSE(parse_json_file(dir + "/run.json").contains("series_data"));
}

TEST(SeriesFile, RewritingRemovesTheStaleSidecarOnly) {
  std::string dir = fresh_dir("rewrite");
  write_run_record(dir + "/run.json", long_record(1.0));
  write_run_record(dir + "/other.json", long_record(3.0));
  std::vector<std::string> before = sidecars_in(dir);
  write_run_record(dir + "/run.json", long_record(2.0));
  std::vector<std::string> after = sidecars_in(dir);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(after.size(), 2u);  // run's new one and other's, untouched
  EXPECT_NE(before, after);
  expect_identical(long_record(2.0), read_run_record(dir + "/run.json"));
  expect_identical(long_record(3.0), read_run_record(dir + "/other.json"));
}

TEST(SeriesFile, SidecarNamesAreRecognisedStrictly) {
  EXPECT_EQ(sidecar_name("run.json", "0123456789abcdef0123456789abcdef"), "run.0123456789abcdef.series");
  EXPECT_TRUE(is_sidecar_of("run.0123456789abcdef.series", "run.json"));
  EXPECT_FALSE(is_sidecar_of("run.0123456789abcdeX.series", "run.json"));
  EXPECT_FALSE(is_sidecar_of("run.0123456789abcde.series", "run.json"));
  EXPECT_FALSE(is_sidecar_of("runs.0123456789abcdef.series", "run.json"));
  EXPECT_FALSE(is_sidecar_of("run.0123456789abcdef.json", "run.json"));
  EXPECT_EQ(sidecar_twin_of("run.json"), "run");
  EXPECT_EQ(sidecar_twin_of("run"), "run.json");
}

// Each bad sidecar or reference is exit 2 with a message that names the
// file and says what was expected.
class BadSidecar : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    path = dir + "/run.json";
    write_run_record(path, long_record());
    doc = parse_json_file(path);
    sidecar = dir + "/" + doc["series_data"]["file"].get<std::string>();
  }
  void expect_exit2(const std::string& needle) {
    try {
      read_golden_or_record(path);
      FAIL() << "accepted; expected: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  void rewrite_json() { write_file_atomically(path, pretty_dump(doc)); }
  std::string dir, path, sidecar;
  nlohmann::json doc;
};

TEST_F(BadSidecar, MissingFile) {
  fs::remove(sidecar);
  expect_exit2(path + ": series_data.file: expected a readable sidecar file beside the record; " + sidecar +
               ": No such file or directory");
}

TEST_F(BadSidecar, TruncatedFile) {
  std::string bytes = read_file(sidecar);
  write_file_atomically(sidecar, bytes.substr(0, bytes.size() - 8));
  expect_exit2(sidecar + ": series sidecar of " + path + ": expected 240024 bytes (series_data.bytes), got 240016");
}

// A FIFO must not block the read (open is non-blocking, then refused).
TEST_F(BadSidecar, FifoIsRefusedWithoutBlocking) {
  fs::remove(sidecar);
  ASSERT_EQ(::mkfifo(sidecar.c_str(), 0600), 0);
  expect_exit2(path + ": series_data.file: expected a regular file; " + sidecar + " is not one");
}

// A file of the wrong size is refused before it is read.
TEST_F(BadSidecar, OversizedFile) {
  fs::resize_file(sidecar, uint64_t{3} << 30);  // sparse: no disk used
  expect_exit2("expected 240024 bytes (series_data.bytes), got 3221225472");
}

TEST_F(BadSidecar, ControlCharactersInTheNameAreShownEscaped) {
  doc["series_data"]["file"] = std::string("run.series\nx", 12) + std::string(1, '\0') + "y";
  rewrite_json();
  expect_exit2("series_data.file: expected a plain file name in the record's folder, got \"run.series\\nx\\u0000y\"");
}

TEST_F(BadSidecar, EditedFile) {
  std::string bytes = read_file(sidecar);
  bytes[100] ^= 1;
  write_file_atomically(sidecar, bytes);
  expect_exit2(": content does not match series_data.xxh3_128 (edited or replaced)");
}

TEST_F(BadSidecar, PathInTheFileName) {
  doc["series_data"]["file"] = "../elsewhere.series";
  rewrite_json();
  expect_exit2(path + ": series_data.file: expected a plain file name in the record's folder, got \"../elsewhere.series\"");
}

TEST_F(BadSidecar, MisalignedOffset) {
  doc["series"]["loss"]["values"]["offset"] = 4;
  rewrite_json();
  expect_exit2("series.loss.values.offset: expected a multiple of 8, got 4");
}

TEST_F(BadSidecar, RangePastTheEnd) {
  doc["series"]["loss"]["values"]["offset"] = 240000;
  rewrite_json();
  expect_exit2("series.loss.values.count: expected");
}

TEST_F(BadSidecar, Float32ValueThatIsNotBinary32) {
  // loss is float32; point it at grad_norm's values, whose [5] is a float64
  // denormal (grad_norm itself dropped: two references may not share bytes).
  doc["series"]["loss"]["values"]["offset"] = 0;
  doc["series"].erase("grad_norm");
  rewrite_json();
  expect_exit2("series.loss.values: expected a float32 value exactly representable in binary32, got 5e-324 at index 5");
}

// A float32 series' NaN must be a binary32 NaN widened: a payload in the
// low 29 bits would be lost, so two different stored NaNs would read as one.
TEST_F(BadSidecar, Float32NaNWithAPayloadBinary32CannotHold) {
  RunRecord r = long_record();
  uint64_t payload_nan = 0x7ff8000000000001;
  std::memcpy(&r.series["loss"].values[7], &payload_nan, sizeof payload_nan);
  write_run_record(path, r);
  expect_exit2("series.loss.values: expected a float32 NaN (the binary64 widening of a binary32 NaN), got a NaN "
               "whose payload binary32 cannot hold at index 7");
  // A binary32 NaN with a payload, widened, is fine and keeps its bits.
  float f32_nan;
  uint32_t f32_bits = 0xffc00123;
  std::memcpy(&f32_nan, &f32_bits, sizeof f32_bits);
  r.series["loss"].values[7] = static_cast<double>(f32_nan);
  write_run_record(path, r);
  expect_identical(read_golden_or_record(path).record, r);
}

// References that share bytes would let a small record decode its file
// many times over (300 series on one array: 300 copies in memory).
TEST_F(BadSidecar, OverlappingReferences) {
  doc["series"]["loss"]["values"] = doc["series"]["grad_norm"]["values"];
  rewrite_json();
  expect_exit2("series.loss.values: expected a range of the sidecar no other reference shares (lockstep writes each "
               "array once), got bytes [0, 80008), which overlap series.grad_norm.values's [0, 80008)");
  doc["series"]["loss"]["values"]["offset"] = 8;
  doc["series"]["loss"]["values"]["count"] = 1;
  rewrite_json();
  expect_exit2("series.loss.values: expected a range of the sidecar no other reference shares");
}

// Records "run" and "run.json" side by side: writing one never removes
// the other's sidecar (their sidecar names share one pattern).
TEST(SeriesFile, RecordsNamedXAndXJsonKeepTheirSidecars) {
  std::string dir = fresh_dir("twins");
  write_run_record(dir + "/run.json", long_record(1.0));
  write_run_record(dir + "/run", long_record(2.0));
  write_run_record(dir + "/run", long_record(4.0));
  expect_identical(long_record(1.0), read_run_record(dir + "/run.json"));
  expect_identical(long_record(4.0), read_run_record(dir + "/run"));
}

TEST_F(BadSidecar, ReferenceWithoutSeriesData) {
  doc.erase("series_data");
  rewrite_json();
  expect_exit2("series.grad_norm.values: expected an array of numbers (a sidecar reference");
}

TEST(SeriesFile, ARecordReachedThroughALinkFindsItsSidecar) {
  std::string dir = fresh_dir("link");
  fs::create_directories(dir + "/runs/7");
  write_run_record(dir + "/runs/7/run.json", long_record());
  fs::create_symlink("runs/7/run.json", dir + "/latest.json");
  expect_identical(long_record(), read_run_record(dir + "/latest.json"));
  expect_identical(long_record(), read_golden_or_record(dir + "/latest.json").record);
}

TEST_F(BadSidecar, GoldenWithASidecarIsRejected) {
  Golden g;
  g.record = testing::make_record({1.0});
  g.provenance = {"initial", "2026-11-29T09:00:00Z", "abc", "A <a@b>", "0.1.0", false, 2, {}};
  std::string golden_path = dir + "/golden.json";
  write_golden(golden_path, g);
  nlohmann::json gd = parse_json_file(golden_path);
  gd["series_data"] = doc["series_data"];
  write_file_atomically(golden_path, pretty_dump(gd));
  try {
    read_golden(golden_path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("series_data: expected no sidecar: goldens"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lockstep

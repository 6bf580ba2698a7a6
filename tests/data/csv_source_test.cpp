#include "data/csv_source.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

std::string write_temp(const std::string& name, const std::string& content) {
  fs::path d = fs::temp_directory_path() / ("lockstep-csv-" + std::to_string(::getpid()));
  fs::create_directories(d);
  std::string p = (d / name).string();
  write_file_atomically(p, content);
  return p;
}

std::string gzip(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string error_of(const CsvOptions& o) {
  try {
    read_csv(o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "(no error)";
}

TEST(Csv, ReadsScaledFeaturesAndLabels) {
  std::string p = write_temp("ok.csv", "2 rows header\n0,16,8,1\n4,2,0,0\n");
  CsvTable t = read_csv({p, 1, -1, 1.0 / 16});
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.features, 3);
  EXPECT_EQ(t.values, (std::vector<float>{0, 1, 0.5f, 0.25f, 0.125f, 0}));
  EXPECT_EQ(t.labels, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(t.num_classes, 2);
}

TEST(Csv, GzipIsDetectedByMagicBytes) {
  std::string p = write_temp("ok.csv.gz", gzip("1,2,3\n4,5,6\n"));
  CsvTable t = read_csv({p, 0, 0, 1.0});
  EXPECT_EQ(t.labels, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(t.values, (std::vector<float>{2, 3, 5, 6}));
}

TEST(Csv, EveryGzipMemberIsReadAndTrailingJunkRejected) {
  std::string p = write_temp("members.csv.gz", gzip("1,2,3\n") + gzip("4,5,6\n"));
  EXPECT_EQ(read_csv({p, 0, 0, 1.0}).rows, 2);
  std::string junk = write_temp("junk.csv.gz", gzip("1,2,3\n") + "JUNKJUNK");
  EXPECT_EQ(error_of({junk, 0, -1, 1.0}), junk + ": expected nothing after the last gzip member (found 8 trailing bytes)");
}

TEST(Csv, Float32OverflowIsRejected) {
  std::string p = write_temp("overflow.csv", "1e40,0\n");
  EXPECT_EQ(error_of({p, 0, -1, 1.0}), p + ": line 1, column 1: expected a value finite in float32 after scaling, got '1e40'");
}

TEST(Csv, NotARegularFileIsRejected) {
  EXPECT_EQ(error_of({"/dev/zero", 0, -1, 1.0}), "/dev/zero: cannot read: not a regular file");
}

TEST(Csv, TruncatedGzipIsExit2) {
  std::string z = gzip(std::string(5000, '1') + ",2\n");
  std::string p = write_temp("trunc.csv.gz", z.substr(0, z.size() / 2));
  EXPECT_EQ(error_of({p, 0, -1, 1.0}), p + ": expected a complete gzip stream (the file is truncated)");
}

TEST(Csv, WrongColumnCountNamesTheLine) {
  std::string p = write_temp("cols.csv", "1,2,0\n3,4,1\n5,6\n");
  EXPECT_EQ(error_of({p, 0, -1, 1.0}), p + ": line 3: expected 3 columns like the first data row, got 2");
}

TEST(Csv, NonNumericCellNamesLineAndColumn) {
  std::string p = write_temp("nan.csv", "1,2,0\n3,x,1\n");
  EXPECT_EQ(error_of({p, 0, -1, 1.0}), p + ": line 2, column 2: expected a finite number, got 'x'");
}

TEST(Csv, BadLabelAndEmptyFile) {
  std::string p = write_temp("label.csv", "1,2,0.5\n");
  EXPECT_EQ(error_of({p, 0, -1, 1.0}), p + ": line 1, column 3: expected a non-negative integer class label, got '0.5'");
  std::string e = write_temp("empty.csv", "header\n\n");
  EXPECT_EQ(error_of({e, 1, -1, 1.0}), e + ": expected at least one data row (the dataset is empty)");
  EXPECT_EQ(error_of({"/nonexistent.csv", 0, -1, 1.0}), "/nonexistent.csv: cannot read: No such file or directory");
}

TEST(CsvSource, CrOnlyLineEndingsAreNamedNotCalledEmpty) {
  std::string p = write_temp("mac.csv", "1,2,0\r3,4,1\r");
  EXPECT_EQ(error_of({p, 0, -1, 1.0}),
            p + ": byte 5: expected lines ending in LF or CRLF; this file ends its lines with CR alone (classic "
                "Mac OS): convert it, e.g. `tr '\\r' '\\n'`");
  // CRLF is fine.
  EXPECT_EQ(read_csv({write_temp("dos.csv", "1,2,0\r\n3,4,1\r\n"), 0, -1, 1.0}).rows, 2);
}

TEST(CsvSource, ANulByteIsNamedAtItsOffsetNotAsAShortRow) {
  std::string p = write_temp("nul.csv", std::string("1,2,0\n3,\0004,1\n", 12));
  EXPECT_EQ(error_of({p, 0, -1, 1.0}),
            p + ": byte 8: expected text without NUL bytes (the file holds binary data, or was damaged)");
}


// Bounded memory: the caps stop a gzip bomb and a file without line
// breaks after the configured amount, not after reading it whole.
TEST(CsvSource, DecodedSizeAndLineLengthAreCapped) {
  std::string rows;
  for (int i = 0; i < 20000; ++i) rows += "1,2,3,4,5,6,7,8,9,0\n";  // 400,000 bytes
  std::string bomb = write_temp("bomb.csv.gz", gzip(rows));
  CsvOptions o{bomb, 0, -1, 1.0};
  o.max_bytes = 100000;
  EXPECT_EQ(error_of(o), bomb + ": expected at most 100000 bytes of data after decompression (data.max_bytes; raise it "
                                "in the smoke config for a larger file)");
  o.max_bytes = 400000;
  EXPECT_EQ(read_csv(o).rows, 20000);

  std::string wide = write_temp("one-line.csv", std::string(300000, '1') + ",0");
  CsvOptions w{wide, 0, -1, 1.0};
  w.max_line_bytes = 65536;
  EXPECT_EQ(error_of(w), wide + ": line 1: expected at most 65536 bytes per line (data.max_line_bytes; raise it in the "
                                "smoke config for wider rows)");
}

// Streaming across 1 MiB pieces: a line and a gzip member boundary that
// straddle pieces read as if the file were read whole.
TEST(CsvSource, PiecesAndMembersStraddlingTheReadSizeParseTheSame) {
  std::string a, b;
  for (int i = 0; i < 60000; ++i) a += std::to_string(i % 97) + ",1.5,2\n";
  for (int i = 0; i < 60000; ++i) b += std::to_string(i % 89) + ",0.25,1\n";
  std::string plain = write_temp("big.csv", a + b);
  std::string members = write_temp("big.csv.gz", gzip(a) + gzip(b));
  CsvTable x = read_csv({plain, 0, -1, 1.0});
  CsvTable y = read_csv({members, 0, -1, 1.0});
  EXPECT_GT(a.size() + b.size(), size_t{1} << 20);
  EXPECT_EQ(x.rows, 120000);
  EXPECT_EQ(x.values, y.values);
  EXPECT_EQ(x.labels, y.labels);
  EXPECT_EQ(x.num_classes, 3);
}

}  // namespace
}  // namespace lockstep

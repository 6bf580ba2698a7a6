// MLflow's metric history, from both stores written here in MLflow's own
// shapes: a tracking database with MLflow's tables (metrics with its
// primary key and is_nan, runs with names), and a file store's
// mlruns/<experiment>/<run>/metrics/<key> files; and the refusals, each
// naming the file and the row, line or key.
#include "ingest/mlflow.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cfloat>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "ingest/ingest_test_util.h"
#include "ingest/metrics.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

// MLflow's schema as its SQLAlchemy store creates it (the columns lockstep reads).
constexpr const char* kSchema = R"(
CREATE TABLE runs (run_uuid VARCHAR(32) NOT NULL, name VARCHAR(250), status VARCHAR(9), start_time BIGINT,
                   experiment_id INTEGER, PRIMARY KEY (run_uuid));
CREATE TABLE metrics (key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,
                      run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT '0' NOT NULL,
                      is_nan BOOLEAN DEFAULT '0' NOT NULL,
                      CONSTRAINT metric_pk PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan));
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
INSERT INTO runs (run_uuid, name) VALUES ('6f1c0a', 'night-1'), ('9b2d4e', 'night-2');
)";

class MlflowDatabase : public ::testing::Test {
 protected:
  IngestTempDir dir_{"mlflow-db"};
  std::string db_ = dir_.path("mlflow.db");

  void sql(const std::string& statements) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &error);
    std::string message = error ? error : "";
    sqlite3_free(error);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  }
  std::map<std::string, Series> read(const std::string& run, std::map<std::string, std::string> series) {
    MetricsSpec spec;
    spec.format = MetricsFormat::kMlflow;
    spec.path = db_;
    spec.run = run;
    spec.series = std::move(series);
    return read_metrics(spec);
  }
  std::string error(const std::string& run, std::map<std::string, std::string> series) {
    return exit2_message([&] { read(run, series); });
  }
};

TEST_F(MlflowDatabase, ReadsARunByUuidOrNameInStepOrder) {
  sql(kSchema);
  // Logged out of order, NaN as is_nan = 1 (value 0), +-inf as float64's largest.
  sql("INSERT INTO metrics VALUES ('train/loss', 2.25, 1001, '6f1c0a', 1, 0), ('train/loss', 2.5, 1000, '6f1c0a', 0, 0),"
      "('train/loss', 0, 1002, '6f1c0a', 2, 1), ('train/loss', 1.7976931348623157e308, 1003, '6f1c0a', 3, 0),"
      "('train/loss', -1.7976931348623157e308, 1004, '6f1c0a', 4, 0), ('lr', 0.1, 1000, '6f1c0a', 0, 0),"
      "('train/loss', 9.0, 1000, '9b2d4e', 0, 0);");
  for (const std::string run : {"6f1c0a", "night-1"}) {
    auto s = read(run, {{"loss", "train/loss"}, {"lr", "lr"}});
    const Series& loss = s.at("loss");
    ASSERT_EQ(loss.values.size(), 5u) << run;
    EXPECT_EQ(loss.values[0], 2.5);
    EXPECT_EQ(loss.values[1], 2.25);
    EXPECT_TRUE(std::isnan(loss.values[2]));
    EXPECT_EQ(loss.values[3], INFINITY);
    EXPECT_EQ(loss.values[4], -INFINITY);
    EXPECT_TRUE(loss.steps.empty()) << "steps 0..4 are implicit";
    EXPECT_EQ(loss.dtype, Series::Dtype::kFloat64);
    EXPECT_EQ(s.at("lr").values, std::vector<double>{0.1});
  }
  EXPECT_EQ(read("night-2", {{"loss", "train/loss"}}).at("loss").values, std::vector<double>{9.0});
}

TEST_F(MlflowDatabase, AReloggedStepIsAcceptedOnlyWithTheSameValue) {
  sql(kSchema);
  sql("INSERT INTO metrics VALUES ('loss', 2.5, 1000, '6f1c0a', 0, 0), ('loss', 2.25, 1001, '6f1c0a', 1, 0),"
      "('loss', 2.25, 2001, '6f1c0a', 1, 0);");
  EXPECT_EQ(read("", {{"loss", "loss"}}).size(), 1u) << "one run: no --run needed";
  sql("INSERT INTO metrics VALUES ('loss', 2.0, 3001, '6f1c0a', 1, 0);");
  std::string e = error("6f1c0a", {{"loss", "loss"}});
  EXPECT_HAS(e, db_);
  EXPECT_HAS(e, "row 2");
  EXPECT_HAS(e, "row 4");
}

TEST_F(MlflowDatabase, RunsAreNamedWhenNoneOrSeveralMatch) {
  sql(kSchema);
  sql("INSERT INTO metrics VALUES ('loss', 1, 1, '6f1c0a', 0, 0), ('loss', 2, 1, '9b2d4e', 0, 0);");
  std::string several = error("", {{"loss", "loss"}});
  EXPECT_HAS(several, db_ + ": run_uuid: expected one run, or --run naming one; it holds several: "
                            "6f1c0a (name: night-1), 9b2d4e (name: night-2)");
  std::string none = error("night-9", {{"loss", "loss"}});
  EXPECT_HAS(none, "a run whose run_uuid or name is \"night-9\"; the runs with metrics are: 6f1c0a (name: night-1)");
  std::string key = error("night-1", {{"loss", "los"}});
  EXPECT_HAS(key, "key 'los': expected the key of series loss in run 6f1c0a's metrics; it never appears "
                  "(did you mean 'loss'?)");
}

TEST_F(MlflowDatabase, ValuesAndStepsOfOtherTypesAreRefusedNamingTheRow) {
  sql(kSchema);
  sql("INSERT INTO metrics VALUES ('loss', 'high', 1, '6f1c0a', 0, 0);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": row 1: key 'loss': expected a numeric value, got 'high'");
  sql("DELETE FROM metrics; INSERT INTO metrics VALUES ('loss', 1.5, 1, '6f1c0a', 'two', 0);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), ": key 'loss': expected an integer step, got 'two'");
  sql("DELETE FROM metrics; INSERT INTO metrics VALUES ('loss', 1.5, 1, '6f1c0a', -3, 0);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), "expected a step of 0 or more, got -3");
}

TEST_F(MlflowDatabase, OtherFilesAreRefusedNamingThem) {
  write_bytes(db_, "key,value\nloss,1\n");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": expected an MLflow tracking database (an SQLite file");
  fs::remove(db_);
  sql("CREATE TABLE other (x INTEGER);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": metrics: expected MLflow's metrics table");
  fs::remove(db_);
  sql(kSchema);
  sql("INSERT INTO metrics VALUES ('loss', 1, 1, '6f1c0a', 0, 0);");
  std::string whole = read_file(db_);
  write_bytes(db_, whole.substr(0, 2100));  // cut inside the second page
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": byte 2100: expected the whole database: its header says ");
  // Cut at a page boundary: shorter than the header's page count.
  write_bytes(db_, whole.substr(0, whole.size() - 4096));
  EXPECT_HAS(error("", {{"loss", "loss"}}), "the file ends at byte " + std::to_string(whole.size() - 4096) +
                                                " (cut short while being copied?)");
  // A damaged page is SQLite's to name.
  std::string damaged = whole;
  for (size_t i = 4096; i < damaged.size(); ++i) damaged[i] = '\x5a';
  write_bytes(db_, damaged);
  std::string broken = error("", {{"loss", "loss"}});
  EXPECT_HAS(broken, db_ + ": ");
  EXPECT_HAS(broken, "(sqlite: ");
}

TEST_F(MlflowDatabase, AViewNamedMetricsIsRefusedNotRead) {
  sql("CREATE VIEW metrics AS WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c) "
      "SELECT 'loss' AS key, 1.0 AS value, 0 AS timestamp, 'r1' AS run_uuid, x AS step, 0 AS is_nan FROM c;");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": metrics: expected MLflow's metrics table, got a view of that name");
}

// A run id of another type than text (NULL, an integer) never names a run.
TEST_F(MlflowDatabase, ARunIdThatIsNoTextIsNamed) {
  sql("CREATE TABLE metrics (key, value, timestamp, run_uuid, step, is_nan);");
  sql("INSERT INTO metrics VALUES ('loss', 1, 1, NULL, 0, 0);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": row 1: run_uuid: expected a run id (text), got null");
  fs::remove(db_);
  sql("CREATE TABLE metrics (key, value, timestamp, run_uuid, step, is_nan);");
  sql("INSERT INTO metrics VALUES ('loss', 1, 1, 5, 0, 0);");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": row 1: run_uuid: expected a run id (text), got integer '5'");
}

// A row without a run id is nobody's run: refused naming it, wherever it
// is (the only run is read by a plain scan, which would take it in).
TEST_F(MlflowDatabase, ARowWithoutARunIdIsRefusedWhereverItIs) {
  sql("CREATE TABLE metrics (key, value, timestamp, run_uuid, step, is_nan);");
  sql("INSERT INTO metrics VALUES ('loss', 1.5, 1, '6f1c0a', 0, 0), ('loss', 99, 2, NULL, 1, 0),"
      "('loss', 1.25, 3, '6f1c0a', 1, 0);");
  for (const std::string run : {"", "6f1c0a"})
    EXPECT_HAS(error(run, {{"loss", "loss"}}), db_ + ": row 2: run_uuid: expected a run id (text), got null");
}

// Run ids are compared byte for byte, whatever the column's collation, and
// column names in any case; a column named _rowid_ does not hide the row id.
TEST_F(MlflowDatabase, RunIdsAreComparedByteForByteAndColumnsInAnyCase) {
  sql("CREATE TABLE metrics (KEY TEXT, value FLOAT, timestamp BIGINT, run_uuid TEXT COLLATE NOCASE, STEP BIGINT, "
      "IS_NAN BOOLEAN, _rowid_ TEXT);");
  sql("INSERT INTO metrics VALUES ('loss', 1.5, 1, 'aaa', 0, 0, 'x'), ('loss', 0, 2, 'aaa', 1, 1, 'x'),"
      "('loss', 100, 3, 'AAA', 2, 0, 'x');");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": run_uuid: expected one run, or --run naming one; it holds several");
  auto aaa = read("aaa", {{"loss", "loss"}}).at("loss").values;
  ASSERT_EQ(aaa.size(), 2u);
  EXPECT_EQ(aaa[0], 1.5);
  EXPECT_TRUE(std::isnan(aaa[1])) << "IS_NAN is is_nan";
  EXPECT_EQ(read("AAA", {{"loss", "loss"}}).at("loss").values, std::vector<double>{100});
  sql("INSERT INTO metrics VALUES ('loss', 1, 4, 'AAA', 2, 2, 'x');");
  EXPECT_HAS(error("AAA", {{"loss", "loss"}}), db_ + ": row 4: key 'loss': expected is_nan 0 or 1, got '2'");
}

// A table of 2^16 rows and more is read by two threads, each over half of
// the row ids: the series, the order of a history logged out of order and
// the row each refusal names are a single reader's.
TEST_F(MlflowDatabase, ALargeTableReadInTwoHalvesGivesTheSingleReadersResult) {
  sql(kSchema);
  // Rows 1..80000: loss at steps 0..39999, lr at steps 0..39999, interleaved
  // as logged; acc only in the later half.
  sql("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39999) "
      "INSERT INTO metrics SELECT k.key, CASE k.key WHEN 'loss' THEN 2.0 + i / 65536.0 ELSE 0.125 END, 1000 + i, '6f1c0a', "
      "i, 0 FROM n, (SELECT 'loss' AS key UNION ALL SELECT 'lr') AS k ORDER BY i, k.key;");
  sql("INSERT INTO metrics VALUES ('acc', 0.5, 99999, '6f1c0a', 0, 0);");
  auto s = read("", {{"loss", "loss"}, {"lr", "lr"}, {"acc", "acc"}});
  ASSERT_EQ(s.at("loss").values.size(), 40000u);
  EXPECT_EQ(s.at("loss").values[39999], 2.0 + 39999 / 65536.0);
  EXPECT_TRUE(s.at("loss").steps.empty()) << "steps 0..39999 are implicit";
  EXPECT_EQ(s.at("lr").values, std::vector<double>(40000, 0.125));
  EXPECT_EQ(s.at("acc").values, std::vector<double>{0.5});
  EXPECT_HAS(error("", {{"a", "ac"}}), "(did you mean 'acc'?)");
  // A step of the first half logged again, late (row 80002): sorted as MLflow orders a history.
  sql("INSERT INTO metrics VALUES ('loss', 2.0, 500, '6f1c0a', 0, 0);");
  EXPECT_EQ(read("", {{"loss", "loss"}}).at("loss").values.size(), 40000u);
  // Refusals in both halves: the earlier row's is named; one in the later
  // half alone is named too.
  sql("UPDATE metrics SET value = 'high' WHERE _rowid_ IN (30000, 70000);");
  EXPECT_HAS(error("", {{"loss", "loss"}, {"lr", "lr"}}), db_ + ": row 30000: key 'lr': expected a numeric value, got 'high'");
  sql("UPDATE metrics SET value = 0.125 WHERE _rowid_ = 30000;");
  EXPECT_HAS(error("", {{"loss", "loss"}, {"lr", "lr"}}), db_ + ": row 70000: key 'lr': expected a numeric value, got 'high'");
  // A re-logged step with other bits in the first half comes before a
  // refusal in the later half, as a single reader meets them.
  sql("UPDATE metrics SET step = 1 WHERE _rowid_ = 5;");  // loss: step 2 -> 1, a later timestamp
  std::string both = error("", {{"loss", "loss"}, {"lr", "lr"}});
  EXPECT_HAS(both, "row 5: key 'loss': expected one value per step; step 1 is logged twice with different values");
}

// Row ids that span more than 2^63 (a hand-made table) split without
// overflow; a database another process keeps locked for writing is exit 3
// after a wait, not a damaged file.
TEST_F(MlflowDatabase, RowIdsSpanningTheRangeAndAWriterHoldingTheLock) {
  sql(kSchema);
  sql("INSERT INTO metrics (rowid, key, value, timestamp, run_uuid, step, is_nan) VALUES "
      "(-9223372036854775807, 'loss', 1.5, 1, '6f1c0a', 0, 0), (5, 'loss', 1.25, 2, '6f1c0a', 1, 0), "
      "(9223372036854775807, 'loss', 1.0, 3, '6f1c0a', 2, 0);");
  EXPECT_EQ(read("", {{"loss", "loss"}}).at("loss").values, (std::vector<double>{1.5, 1.25, 1.0}));
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  try {
    read("", {{"loss", "loss"}});
    ADD_FAILURE() << "read a database locked for writing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kEnvironment) << e.what();
    EXPECT_HAS(std::string(e.what()), db_ + ": another process kept the database locked for writing");
  }
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
}

// SQLite's names ignore case: a view METRICS or RUNS is refused as well.
TEST_F(MlflowDatabase, AViewOfEitherNameInAnyCaseIsRefused) {
  sql("CREATE VIEW METRICS AS WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c) "
      "SELECT 'loss' AS key, 1.0 AS value, 0 AS timestamp, 'r1' AS run_uuid, x AS step, 0 AS is_nan FROM c;");
  EXPECT_HAS(error("", {{"loss", "loss"}}), db_ + ": metrics: expected MLflow's metrics table, got a view of that name");
  fs::remove(db_);
  sql(kSchema);
  sql("DROP TABLE runs; CREATE VIEW Runs AS WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c) "
      "SELECT 'r' || x AS run_uuid, 'night-1' AS name FROM c;");
  sql("INSERT INTO metrics VALUES ('loss', 1, 1, '6f1c0a', 0, 0);");
  EXPECT_HAS(error("night-1", {{"loss", "loss"}}), db_ + ": runs: expected MLflow's runs table, got a view of that name");
}

class MlflowFileStore : public ::testing::Test {
 protected:
  IngestTempDir dir_{"mlflow-files"};
  fs::path run_ = fs::path(dir_.path("mlruns")) / "0" / "6f1c0a";

  void metric(const std::string& key, const std::string& lines) {
    fs::create_directories((run_ / "metrics" / key).parent_path());
    write_bytes((run_ / "metrics" / key).string(), lines);
  }
  std::map<std::string, Series> read(const std::string& path, const std::string& run,
                                     std::map<std::string, std::string> series) {
    MetricsSpec spec;
    spec.format = MetricsFormat::kMlflow;
    spec.path = path;
    spec.run = run;
    spec.series = std::move(series);
    return read_metrics(spec);
  }
  std::string error(const std::string& path, const std::string& run, std::map<std::string, std::string> series) {
    return exit2_message([&] { read(path, run, series); });
  }
};

TEST_F(MlflowFileStore, ReadsARunFolderOrTheMlrunsFolderWithARun) {
  metric("train/loss", "1000 2.5 0\n1002 nan 2\n1001 2.25 1\n1003 inf 3\n");
  metric("lr", "1000 0.1\n");  // an old file: no step column, step 0
  fs::create_directories(run_ / "tags");
  write_bytes((run_ / "tags" / "mlflow.runName").string(), "night-1");
  for (const auto& [path, run] : {std::pair<std::string, std::string>{run_.string(), ""},
                                  {dir_.path("mlruns"), "6f1c0a"},
                                  {dir_.path("mlruns"), "night-1"}}) {
    auto s = read(path, run, {{"loss", "train/loss"}, {"lr", "lr"}});
    const Series& loss = s.at("loss");
    ASSERT_EQ(loss.values.size(), 4u) << path << " " << run;
    EXPECT_EQ(loss.values[0], 2.5);
    EXPECT_EQ(loss.values[1], 2.25);
    EXPECT_TRUE(std::isnan(loss.values[2]));
    EXPECT_EQ(loss.values[3], INFINITY);
    EXPECT_EQ(s.at("lr").values, std::vector<double>{0.1});
  }
}

// --run names a run by its id before any run's name; deleted runs
// (mlruns/.trash) are no candidates.
TEST_F(MlflowFileStore, AnIdWinsOverANameAndTheTrashIsNotSearched) {
  metric("loss", "1000 2.5 0\n");
  fs::path other = run_.parent_path() / "7c3b1d";
  fs::create_directories(other / "metrics");
  write_bytes((other / "metrics" / "loss").string(), "1000 9.5 0\n");
  fs::create_directories(other / "tags");
  write_bytes((other / "tags" / "mlflow.runName").string(), "6f1c0a");  // named like the other run's id
  EXPECT_EQ(read(dir_.path("mlruns"), "6f1c0a", {{"loss", "loss"}}).at("loss").values, std::vector<double>{2.5});
  fs::path trashed = fs::path(dir_.path("mlruns")) / ".trash" / "5a5a5a";
  fs::create_directories(trashed / "metrics");
  write_bytes((trashed / "metrics" / "loss").string(), "1000 7.5 0\n");
  fs::create_directories(trashed / "tags");
  write_bytes((trashed / "tags" / "mlflow.runName").string(), "night-1");
  fs::create_directories(run_ / "tags");
  write_bytes((run_ / "tags" / "mlflow.runName").string(), "night-1");
  EXPECT_EQ(read(dir_.path("mlruns"), "night-1", {{"loss", "loss"}}).at("loss").values, std::vector<double>{2.5});
}

TEST_F(MlflowFileStore, RefusalsNameTheFileLineOrKey) {
  metric("train/loss", "1000 2.5 0\n1001 high 1\n");
  std::string file = (run_ / "metrics" / "train" / "loss").string();
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}),
             file + ": line 2: expected a number after the timestamp, got 'high'");
  metric("train/loss", "1000 2.5 0 extra\n");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}),
             file + ": line 1: expected \"<timestamp> <value> <step>\"");
  metric("train/loss", "1000 2.5 0\n1001 2.0 0\n");
  std::string relog = error(run_.string(), "", {{"loss", "train/loss"}});
  EXPECT_HAS(relog, "line 1");
  EXPECT_HAS(relog, "line 2");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "../../secret"}}),
             "key '../../secret': expected an MLflow metric key (no empty, '.' or '..' parts)");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/los"}}), "(did you mean 'train/loss'?)");
  EXPECT_HAS(error(dir_.path("mlruns"), "", {{"loss", "train/loss"}}),
             "expected an MLflow run's folder (holding metrics/), or this folder with --run RUN; its runs: 0/6f1c0a");
  EXPECT_HAS(error(dir_.path("mlruns"), "night-9", {{"loss", "train/loss"}}),
             "whose run id or mlflow.runName is \"night-9\" (none is)");
  EXPECT_HAS(error(run_.string(), "night-9", {{"loss", "train/loss"}}),
             "expected the run \"night-9\" that --run names; this run folder is 6f1c0a");
  metric("train/loss", "1000 2.5 0 \n");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}), file + ": line 1: expected \"<timestamp> <value> <step>\"");
  // A line cut short of its step, and a stray CR, are no line MLflow wrote.
  metric("train/loss", "1000 2.5 0\n1001 2.25\n");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}),
             file + ": line 2: expected 3 fields as on line 1, got 2 (a line cut short?)");
  // A last line without its newline was cut: "1001 2.0 10" cut to "1001 2.0 1" reads as another step.
  metric("train/loss", "1000 2.0 0\n1001 2.0 1");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}),
             file + ": line 2: expected a line ending in a newline; the file ends mid-line");
  metric("train/loss", "1000 2.5 0\r\r\n");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train/loss"}}), file + ": line 1: expected a step of 0 or more last");
  EXPECT_HAS(error(run_.string(), "", {{"loss", "train//loss"}}),
             "key 'train//loss': expected an MLflow metric key (no empty, '.' or '..' parts)");
  // The experiment's folder with --run finds the run too.
  metric("train/loss", "1000 2.5 0\n");
  EXPECT_EQ(read((fs::path(dir_.path("mlruns")) / "0").string(), "6f1c0a", {{"loss", "train/loss"}}).at("loss").values,
            std::vector<double>{2.5});
  // One run id in two experiments (a copied run): the experiment is asked for.
  fs::path copy = fs::path(dir_.path("mlruns")) / "1" / "6f1c0a" / "metrics" / "train";
  fs::create_directories(copy);
  write_bytes((copy / "loss").string(), "1000 9.5 0\n");
  EXPECT_HAS(error(dir_.path("mlruns"), "6f1c0a", {{"loss", "train/loss"}}),
             "expected one run with id \"6f1c0a\"; several experiments hold one (");
  EXPECT_HAS(error(dir_.path("mlruns"), "6f1c0a", {{"loss", "train/loss"}}),
             "): give the experiment's folder instead of " + dir_.path("mlruns"));
}

}  // namespace
}  // namespace lockstep

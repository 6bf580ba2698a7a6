#include "ingest/mlflow.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <climits>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"
#include "ingest/line_reader.h"
#include "ingest/number_text.h"
#include "ingest/series_builder.h"

namespace lockstep {

namespace {

namespace fs = std::filesystem;

// One logged point before ordering: MLflow's history is by step, then
// timestamp; `position` (row id, line) breaks ties and names it.
struct Point {
  int64_t step;
  int64_t timestamp;
  uint64_t position;
  double value;
};

// MLflow writes +-infinity into its database as float64's largest value.
double from_mlflow(double v) {
  if (v == DBL_MAX) return std::numeric_limits<double>::infinity();
  if (v == -DBL_MAX) return -std::numeric_limits<double>::infinity();
  return v;
}

// Feeds builder `i` its points `p`, ordered as MLflow orders a history,
// and empties `p` (its room kept for the next series).
void add_in_order(SeriesSet& set, size_t i, std::vector<Point>& p) {
  auto before = [](const Point& a, const Point& b) {
    return a.step != b.step ? a.step < b.step : a.timestamp != b.timestamp ? a.timestamp < b.timestamp
                                                                           : a.position < b.position;
  };
  if (!std::is_sorted(p.begin(), p.end(), before)) std::sort(p.begin(), p.end(), before);
  set.reserve(i, p.size());
  for (const Point& q : p) set.at(i).add(q.step, q.value, Series::Dtype::kFloat64, q.position);
  p.clear();
}

// The same for every builder: `points[i]` is builder i's.
void add_in_order(SeriesSet& set, std::vector<std::vector<Point>>& points) {
  for (size_t i = 0; i < points.size(); ++i) {
    add_in_order(set, i, points[i]);
    points[i] = {};
  }
}

// ---- The tracking database (SQLite) -------------------------------------

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct Finalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;
using Statement = std::unique_ptr<sqlite3_stmt, Finalize>;

// The database file's own size against its header (sqlite.org/fileformat2.html,
// "The Database Header"): page size at offset 16 (1 = 65536), the change
// counter at 24, the size in pages at 28, valid when the "version-valid-for"
// number at 92 equals the change counter; the write format at 18 (2 = WAL).
// A file shorter than its header says, or not a whole number of pages, was
// cut short: exit 2 naming the byte where it ends.
void require_whole_database(const std::string& path, bool& wal) {
  unsigned char h[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(h), sizeof h)) throw BadInput(path, "byte 0", "an SQLite database header of 100 bytes");
  auto be32 = [&](int at) {
    return (uint64_t{h[at]} << 24) | (uint64_t{h[at + 1]} << 16) | (uint64_t{h[at + 2]} << 8) | uint64_t{h[at + 3]};
  };
  uint64_t page = (uint64_t{h[16]} << 8) | h[17];
  if (page == 1) page = 65536;
  wal = h[18] == 2;
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  if (ec || page < 512 || (page & (page - 1)) != 0) return;  // SQLite itself says what is wrong
  uint64_t pages = be32(28);
  if (size % page != 0 || (pages > 0 && be32(92) == be32(24) && size < pages * page))
    throw BadInput(path, "byte " + std::to_string(size),
                   "the whole database: its header says " + std::to_string(pages) + " pages of " + std::to_string(page) +
                       " bytes (" + std::to_string(pages * page) + "), the file ends at byte " + std::to_string(size) +
                       " (cut short while being copied?)");
}

// What names one version of a file: a replaced file (another inode) or a
// commit (size, modification time) changes it.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
};
FileIdentity identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

bool is_sqlite_file(const std::string& path) {
  char head[16] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::string(head, sizeof head) == std::string("SQLite format 3\0", 16);
}

class Database {
 public:
  /// `busy_ms`: how long a read waits for a writer's lock (MLflow commits
  /// often while a run logs) before exit 3.
  explicit Database(std::string path, int busy_ms = 2000) : path_(std::move(path)) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    db_.reset(db);
    if (rc != SQLITE_OK) fail("", "an SQLite database lockstep can open read-only");
    sqlite3_busy_timeout(db, busy_ms);
  }

  // A statement over `sql` with text parameters; exit 2 when it cannot be
  // prepared (a damaged file, or not MLflow's schema).
  Statement prepare(const std::string& sql, const std::vector<std::string>& params = {}) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      fail("", "an MLflow tracking database whose tables can be read");
    Statement st(s);
    for (size_t i = 0; i < params.size(); ++i)
      sqlite3_bind_text(s, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
    return st;
  }

  // Begins a read transaction and takes its shared lock (a first read);
  // false when SQLite is busy (a writer holds or waits for the file).
  bool try_begin() const {
    Statement begin = prepare("BEGIN");
    if (sqlite3_step(begin.get()) != SQLITE_DONE) return false;
    Statement read = prepare("SELECT 1 FROM sqlite_master LIMIT 1");
    int rc = sqlite3_step(read.get());
    return rc == SQLITE_ROW || rc == SQLITE_DONE;
  }

  // Runs a statement without rows (BEGIN); exit 2 when SQLite refuses it.
  void exec(const std::string& sql) const {
    Statement st = prepare(sql);
    step(st.get());
  }

  // SQLITE_ROW or SQLITE_DONE; exit 2 for anything else (a damaged page).
  bool step(sqlite3_stmt* s) const {
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail("", "an SQLite database that reads through (a damaged or partly written file?)");
    return false;
  }

  std::vector<std::string> column_names(const std::string& table) const {
    std::vector<std::string> names;
    Statement st = prepare("PRAGMA table_info(" + table + ")");
    while (step(st.get())) names.push_back(text(st.get(), 1));
    return names;
  }

  static std::string text(sqlite3_stmt* s, int column) {
    const unsigned char* t = sqlite3_column_text(s, column);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, column)))
             : std::string();
  }

  // Exit 2 naming what was expected; exit 3 when a writer kept the file
  // locked (the machine's state, not the file's).
  [[noreturn]] void fail(const std::string& field, const std::string& expected) const {
    std::string why = db_ ? sqlite3_errmsg(db_.get()) : "out of memory";
    int code = db_ ? sqlite3_errcode(db_.get()) & 0xff : SQLITE_NOMEM;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
      throw EnvironmentError(path_ + ": another process kept the database locked for writing (an MLflow server "
                             "logging?): import again, or import a copy (sqlite: " + why + ")");
    throw BadInput(path_, field, expected + " (sqlite: " + why + ")");
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Db db_;
};

// "abc (name: night-1)" for each run of the database, at most 10.
std::string list_runs(const Database& db, bool have_runs_table) {
  std::string sql = have_runs_table
                        ? "SELECT DISTINCT m.run_uuid, r.name FROM metrics m LEFT JOIN runs r ON r.run_uuid = m.run_uuid "
                          "LIMIT 11"
                        : "SELECT DISTINCT run_uuid, NULL FROM metrics LIMIT 11";
  Statement st = db.prepare(sql);
  std::string out;
  int n = 0;
  while (db.step(st.get())) {
    if (++n > 10) return out + ", ...";
    std::string name = Database::text(st.get(), 1);
    out += (out.empty() ? "" : ", ") + input_excerpt(Database::text(st.get(), 0)) +
           (name.empty() ? "" : " (name: " + input_excerpt(name) + ")");
  }
  return out;
}

// Whether the table holds a run other than `run` (a run id of another
// type too: numbers sort before text, blobs after): a seek on MLflow's
// run_uuid index (a DISTINCT would walk all of it).
// Byte for byte: a column declared COLLATE NOCASE must not make "aaa" and
// "AAA" one run.
bool another_run(const Database& db, const std::string& run) {
  Statement st = db.prepare(
      "SELECT 1 FROM metrics WHERE run_uuid < ?1 COLLATE BINARY OR run_uuid > ?1 COLLATE BINARY LIMIT 1", {run});
  return db.step(st.get());
}

// A row without a run id is nobody's run: exit 2 naming it (by `rowid`),
// wherever it is.
void refuse_rows_without_run(const Database& db, const std::string& rowid) {
  Statement st = db.prepare("SELECT " + rowid + " FROM metrics WHERE run_uuid IS NULL LIMIT 1");
  if (db.step(st.get()))
    throw BadInput(db.path(), "row " + Database::text(st.get(), 0) + ": run_uuid", "a run id (text), got null");
}

// The run_uuid `run` names (a uuid, else a run name), or the only run.
std::string resolve_run(const Database& db, const std::string& run, bool have_runs_table, const std::string& rowid) {
  if (run.empty()) {
    Statement first = db.prepare("SELECT run_uuid, typeof(run_uuid), " + rowid + " FROM metrics LIMIT 1");
    if (!db.step(first.get())) throw BadInput(db.path(), "metrics", "logged metrics (the table is empty)");
    std::string only = Database::text(first.get(), 0);
    if (Database::text(first.get(), 1) != "text")  // MLflow's run ids are text; another type never matches one
      throw BadInput(db.path(), "row " + Database::text(first.get(), 2) + ": run_uuid",
                     "a run id (text), got " + Database::text(first.get(), 1) +
                         (Database::text(first.get(), 1) == "null" ? "" : " '" + input_excerpt(only) + "'"));
    if (another_run(db, only))
      throw BadInput(db.path(), "run_uuid",
                     "one run, or --run naming one; it holds several: " + list_runs(db, have_runs_table));
    return only;
  }
  // A run id names its run (ids are unique; names need not be).
  Statement st = db.prepare("SELECT 1 FROM metrics WHERE run_uuid = ?1 COLLATE BINARY LIMIT 1", {run});
  if (db.step(st.get())) return run;
  if (have_runs_table) {
    Statement named = db.prepare("SELECT run_uuid FROM runs WHERE name = ?1 LIMIT 2", {run});
    std::vector<std::string> uuids;
    while (db.step(named.get())) uuids.push_back(Database::text(named.get(), 0));
    if (uuids.size() == 1) return uuids[0];
    if (uuids.size() > 1)
      throw BadInput(db.path(), "runs.name", "one run named \"" + run + "\"; several are (" + uuids[0] + ", " +
                                                 uuids[1] + "): give --run its run_uuid");
  }
  throw BadInput(db.path(), "run_uuid",
                 "a run whose run_uuid or name is \"" + run + "\"; the runs with metrics are: " +
                     list_runs(db, have_runs_table));
}

// The columns of one selected row (_rowid_, key, value, step, is_nan,
// timestamp), each taken once. The connection is opened NOMUTEX, where
// SQLite makes no difference between protected and unprotected values
// (sqlite3.org/c3ref/value.html), so the sqlite3_value_* calls read them
// directly: a column call per field was most of a row's cost.
struct Row {
  explicit Row(sqlite3_stmt* s) : stmt(s) {
    for (int i = 0; i < 6; ++i) column[i] = sqlite3_column_value(s, i);
  }
  int type(int i) const { return sqlite3_value_type(column[i]); }
  int64_t integer(int i) const { return sqlite3_value_int64(column[i]); }
  std::string_view text(int i) const {
    auto t = reinterpret_cast<const char*>(sqlite3_value_text(column[i]));
    return {t ? t : "", static_cast<size_t>(sqlite3_value_bytes(column[i]))};
  }
  sqlite3_stmt* stmt;
  sqlite3_value* column[6];
};

// One metrics row of a requested key as a Point; exit 2 naming the row and
// key for a step, is_nan, timestamp or value of another type.
Point decode_row(const Row& row, uint64_t rowid, std::string_view key, const std::string& file) {
  auto where = [&] { return "row " + std::to_string(rowid) + ": key '" + std::string(key) + "'"; };
  auto bad = [&](int column, int type, const std::string& expected) {
    return BadInput(file, where(), expected + ", got " + (type == SQLITE_NULL ? "NULL" : "'" + input_excerpt(Database::text(row.stmt, column)) + "'"));
  };
  const int step_type = row.type(3), nan_type = row.type(4), time_type = row.type(5), value_type = row.type(2);
  if (step_type != SQLITE_INTEGER) throw bad(3, step_type, "an integer step");
  int64_t step = row.integer(3);
  if (step < 0) throw BadInput(file, where(), "a step of 0 or more, got " + std::to_string(step));
  if (nan_type != SQLITE_INTEGER && nan_type != SQLITE_NULL) throw bad(4, nan_type, "an integer is_nan");
  if (time_type != SQLITE_INTEGER && time_type != SQLITE_NULL) throw bad(5, time_type, "an integer timestamp");
  if (nan_type == SQLITE_INTEGER && row.integer(4) != 0 && row.integer(4) != 1) throw bad(4, nan_type, "is_nan 0 or 1");
  bool is_nan = nan_type == SQLITE_INTEGER && row.integer(4) == 1;
  int64_t timestamp = time_type == SQLITE_NULL ? 0 : row.integer(5);
  double value;
  if (is_nan) value = std::numeric_limits<double>::quiet_NaN();  // MLflow stores 0 beside is_nan = 1
  else if (value_type == SQLITE_FLOAT || value_type == SQLITE_INTEGER) value = from_mlflow(sqlite3_value_double(row.column[2]));
  else throw bad(2, value_type, "a numeric value");
  return {step, timestamp, rowid, value};
}

// (step, timestamp) of the point fed last to each builder; {-1, min} before.
using LastFed = std::vector<std::pair<int64_t, int64_t>>;

// Feeds point `p` to builder `k` unless it comes before the one fed last
// (MLflow's order is (step, timestamp)): false then, nothing fed.
bool feed_in_order(SeriesSet& set, LastFed& last, size_t k, const Point& p) {
  if (std::make_pair(p.step, p.timestamp) < last[k]) return false;
  last[k] = {p.step, p.timestamp};
  set.at(k).add(p.step, p.value, Series::Dtype::kFloat64, p.position);
  return true;
}

// Calls `requested(k, point)` for each row `sql` selects whose key builder
// `k` reads (decoded, in row order) and `unrequested(key)` for the others;
// stops, returning false, when `requested` does. Throws exit-2 Error for a
// refused row.
template <typename Requested, typename Unrequested>
bool for_each_row(const Database& db, const SeriesSet& set, const std::string& sql,
                  const std::vector<std::string>& params, const std::string& path, Requested requested,
                  Unrequested unrequested) {
  Statement st = db.prepare(sql, params);
  sqlite3_stmt* s = st.get();
  while (db.step(s)) {
    Row row(s);
    std::string_view key = row.text(1);
    int i = set.find(key);
    if (i < 0) unrequested(key);
    else if (!requested(static_cast<size_t>(i), decode_row(row, static_cast<uint64_t>(row.integer(0)), key, path)))
      return false;
  }
  return true;
}

// Feeds the rows `sql` selects to the builders as they come (MLflow inserts
// a metric's points as they are logged). False as soon as a key's rows are
// out of (step, timestamp) order. Throws exit-2 Error for a refused row.
bool stream_rows(const Database& db, SeriesSet& set, const std::string& sql, const std::vector<std::string>& params,
                 const std::string& path, LastFed& last) {
  return for_each_row(
      db, set, sql, params, path, [&](size_t k, const Point& p) { return feed_in_order(set, last, k, p); },
      [&](std::string_view key) { set.note_unrequested(key); });
}

// The run's requested series from the rows `sql` selects: streamed, or,
// when some key's rows are out of (step, timestamp) order, read again,
// held and sorted.
std::map<std::string, Series> read_rows(const Database& db, const MetricsSpec& spec, const std::string& sql,
                                        const std::string& run) {
  for (bool stream : {true, false}) {
    IngestSources sources("row");
    uint32_t file = sources.add(spec.path);
    SeriesSet set(spec.series, "key", sources);
    set.begin_file(file);
    if (stream) {
      LastFed last(set.size(), {-1, INT64_MIN});
      if (!stream_rows(db, set, sql, {run}, spec.path, last)) continue;
    } else {
      std::vector<std::vector<Point>> points(set.size());
      for_each_row(
          db, set, sql, {run}, spec.path, [&](size_t k, const Point& p) { return points[k].push_back(p), true; },
          [&](std::string_view key) { set.note_unrequested(key); });
      add_in_order(set, points);
    }
    return set.finish(spec.path, "in run " + run + "'s metrics");
  }
  throw std::logic_error("read_rows: unreachable");
}

// The later half of a split read, decoded by its own thread: (builder,
// point) in row order, the keys seen but not requested, and the refusal of
// the row after the last point (raised once the points before it are fed,
// as a single reader would).
struct LaterRows {
  std::vector<std::pair<uint32_t, Point>> points;
  std::vector<std::string> unrequested;  ///< the first 1000 distinct, in row order (as SeriesSet keeps them)
  std::set<std::string, std::less<>> seen;
  std::exception_ptr error;
};

// Decodes the rows `sql` selects on `db` (its own connection: one per
// thread) into `out`; never throws.
void decode_rows(const Database& db, const SeriesSet& set, const std::string& sql, const std::string& path,
                 size_t expected_rows, LaterRows& out) noexcept {
  try {
    out.points.reserve(std::min<size_t>(expected_rows, size_t{1} << 22));
    for_each_row(
        db, set, sql, {}, path,
        [&](size_t k, const Point& p) { return out.points.emplace_back(static_cast<uint32_t>(k), p), true; },
        [&](std::string_view key) {
          if (out.unrequested.size() < 1000 && out.seen.emplace(key).second) out.unrequested.emplace_back(key);
        });
  } catch (...) {
    out.error = std::current_exception();
  }
}

// Tables of this many rows and more are read by two threads, each over its
// half of the row ids on its own connection: SQLite's scan is most of the
// time, and it splits.
constexpr int64_t kSplitRows = int64_t{1} << 16;

// The only run's series read by two threads (see kSplitRows): this one
// streams the first half into the builders while another decodes the
// second, fed after it. Nullopt when the table is small, when a second
// reader cannot share `db`'s view of the file (a writer waiting for its
// lock; a WAL database, where a second connection may see a later commit)
// or when rows come out of order: then one reader reads it all (read_rows).
// `select` is the statement without its WHERE.
std::optional<std::map<std::string, Series>> read_split(const Database& db, const MetricsSpec& spec,
                                                        const std::string& select, const std::string& rowid,
                                                        const std::string& run, const FileIdentity& opened) {
  // The journal mode as this connection reads it, inside its transaction:
  // with its shared lock held nobody can switch the file to WAL.
  Statement mode = db.prepare("PRAGMA journal_mode");
  if (!db.step(mode.get()) || Database::text(mode.get(), 0) == "wal") return std::nullopt;
  // Each alone: SQLite seeks one end of the table for a lone min() or max().
  Statement first_row = db.prepare("SELECT min(" + rowid + ") FROM metrics");
  Statement last_row = db.prepare("SELECT max(" + rowid + ") FROM metrics");
  if (!db.step(first_row.get()) || !db.step(last_row.get()) || sqlite3_column_type(first_row.get(), 0) != SQLITE_INTEGER)
    return std::nullopt;
  const int64_t lo = sqlite3_column_int64(first_row.get(), 0), hi = sqlite3_column_int64(last_row.get(), 0);
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // row ids may span 2^64 - 1
  if (span < static_cast<uint64_t>(kSplitRows)) return std::nullopt;
  // In rollback-journal mode the first connection's shared lock keeps
  // writers from committing: the second reads the same file, or is busy
  // (then one reader). The same file: the path names the file it named
  // before the first connection opened it, unchanged (a file replaced by
  // a rename, or a commit, in between leaves it to one reader, as does a
  // second open that fails).
  std::optional<Database> joined;
  try {
    joined.emplace(spec.path, 0);
    if (!joined->try_begin()) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!(identity_of(spec.path) == opened)) return std::nullopt;
  const Database& second = *joined;
  const auto mid = static_cast<int64_t>(static_cast<uint64_t>(lo) + span / 2);
  IngestSources sources("row");
  uint32_t file = sources.add(spec.path);
  SeriesSet set(spec.series, "key", sources);
  set.begin_file(file);
  LaterRows later;
  std::thread t(decode_rows, std::cref(second), std::cref(set),
                select + " WHERE " + rowid + " > " + std::to_string(mid) + " AND " + rowid + " <= " + std::to_string(hi),
                std::cref(spec.path), static_cast<size_t>(span / 2), std::ref(later));
  LastFed last(set.size(), {-1, INT64_MIN});
  bool in_order = false;
  std::exception_ptr error;
  try {
    in_order = stream_rows(db, set, select + " WHERE " + rowid + " <= " + std::to_string(mid), {}, spec.path, last);
  } catch (...) {
    error = std::current_exception();
  }
  t.join();
  if (error) std::rethrow_exception(error);  // the earlier row's refusal first
  if (!in_order) return std::nullopt;
  for (const auto& key : later.unrequested) set.note_unrequested(key);
  for (const auto& [k, p] : later.points)
    if (!feed_in_order(set, last, k, p)) return std::nullopt;
  if (later.error) std::rethrow_exception(later.error);
  return set.finish(spec.path, "in run " + run + "'s metrics");
}

std::map<std::string, Series> read_mlflow_database(const MetricsSpec& spec) {
  bool wal = false;
  const FileIdentity opened = identity_of(spec.path);  // before the first connection opens it
  require_whole_database(spec.path, wal);
  Database db(spec.path);
  {
    // SQLite's names ignore case: METRICS is the metrics table's name too.
    Statement kind = db.prepare("SELECT lower(name), type FROM sqlite_master WHERE lower(name) IN ('metrics', 'runs') "
                                "AND type = 'view'");
    if (db.step(kind.get()))
      throw BadInput(spec.path, Database::text(kind.get(), 0),
                     "MLflow's " + Database::text(kind.get(), 0) + " table, got a " + Database::text(kind.get(), 1) +
                         " of that name (a view may never end)");
  }
  std::vector<std::string> columns = db.column_names("metrics");
  if (columns.empty())
    throw BadInput(spec.path, "metrics",
                   "MLflow's metrics table (this SQLite database has none: is it an MLflow tracking database?" +
                       std::string(wal ? " It is in WAL mode: its latest writes are in " + spec.path +
                                             "-wal, which must be copied along with it)"
                                       : ")"));
  // Column names ignore case too (IS_NAN is is_nan).
  auto has = [&](std::string c) {
    for (std::string name : columns) {
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (name == c) return true;
    }
    return false;
  };
  for (const char* c : {"key", "value", "run_uuid", "step"})
    if (!has(c)) throw BadInput(spec.path, std::string("metrics.") + c, "MLflow's column " + std::string(c) + " in the metrics table");
  // The row id names rows in messages: under a name no column takes.
  std::string rowid = !has("_rowid_") ? "_rowid_" : !has("rowid") ? "rowid" : "oid";
  if (has(rowid)) throw BadInput(spec.path, "metrics", "a table whose row id can be named (columns _rowid_, rowid and oid hide it)");
  bool have_runs_table = !db.column_names("runs").empty();
  // One read transaction: the rows read are the rows checked.
  db.exec("BEGIN");
  refuse_rows_without_run(db, rowid);
  std::string run = resolve_run(db, spec.run, have_runs_table, rowid);
  // Every row the run's: a plain scan, no run_uuid read per row (the
  // run_uuid index would cost a lookup per row).
  bool one_run = !another_run(db, run);

  std::string is_nan = has("is_nan") ? "is_nan" : "0", timestamp = has("timestamp") ? "timestamp" : "0";
  std::string select = "SELECT " + rowid + ", key, value, step, " + is_nan + ", " + timestamp + " FROM metrics";
  if (one_run)
    if (auto split = read_split(db, spec, select + " NOT INDEXED", rowid, run, opened)) return *split;
  std::string sql = select + (one_run ? " NOT INDEXED" : " WHERE run_uuid = ?1 COLLATE BINARY");
  return read_rows(db, spec, sql, run);
}

// ---- The file store --------------------------------------------------------

// The run folder: `path` itself when it holds metrics/, else the run
// mlruns/<experiment>/<run> that `run` names (its id, or its name from
// tags/mlflow.runName).
fs::path run_folder(const MetricsSpec& spec) {
  fs::path root(spec.path);
  std::error_code ec;
  // The run's name: tags/mlflow.runName, a small regular file (a FIFO or a
  // device there is no name).
  auto run_name = [](const fs::path& run) {
    std::error_code e;
    fs::path tag = run / "tags" / "mlflow.runName";
    if (!fs::is_regular_file(tag, e) || fs::file_size(tag, e) > 4096) return std::string();
    std::string name;
    if (std::ifstream in(tag); in) std::getline(in, name);
    return name;
  };
  auto matches = [&](const fs::path& run) { return run.filename() == spec.run || run_name(run) == spec.run; };
  if (fs::is_directory(root / "metrics", ec)) {
    if (!spec.run.empty() && !matches(root))
      throw BadInput(spec.path, "", "the run \"" + spec.run + "\" that --run names; this run folder is " +
                                        root.filename().string() + (run_name(root).empty() ? "" : " (" + run_name(root) + ")"));
    return root;
  }
  if (spec.run.empty()) {
    // Name the runs there (an experiment's folder, or mlruns/), at most 10.
    std::string runs;
    size_t n = 0;
    auto list = [&](const fs::path& experiment, const std::string& prefix) {
      std::error_code e;
      for (fs::directory_iterator r(experiment, e), rend; !e && r != rend && n <= 10; r.increment(e))
        if (fs::is_directory(r->path() / "metrics", e) && ++n <= 10) {
          std::string name = run_name(r->path());
          runs += (runs.empty() ? "" : ", ") + prefix + r->path().filename().string() + (name.empty() ? "" : " (" + name + ")");
        }
    };
    list(root, "");
    for (fs::directory_iterator e(root, ec), end; !ec && e != end; e.increment(ec))
      if (e->is_directory(ec) && !fs::is_directory(e->path() / "metrics", ec)) list(e->path(), e->path().filename().string() + "/");
    throw BadInput(spec.path, "", "an MLflow run's folder (holding metrics/), or this folder with --run RUN" +
                                      (runs.empty() ? std::string(" (it holds no run)")
                                                    : "; its runs: " + runs + (n > 10 ? ", ..." : "")));
  }
  // A run id names its run (ids are unique; names need not be); deleted
  // runs (mlruns/.trash) are no candidates.
  std::vector<fs::path> found, by_id;
  auto search = [&](const fs::path& experiment) {
    std::error_code e;
    for (fs::directory_iterator r(experiment, e), rend; !e && r != rend; r.increment(e))
      if (fs::is_directory(r->path() / "metrics", e) && matches(r->path())) {
        found.push_back(r->path());
        if (r->path().filename() == spec.run) by_id.push_back(r->path());
      }
  };
  search(root);  // an experiment's folder
  for (fs::directory_iterator e(root, ec), end; !ec && e != end; e.increment(ec))
    if (e->is_directory(ec) && e->path().filename() != ".trash" && !fs::is_directory(e->path() / "metrics", ec))
      search(e->path());  // mlruns/
  if (by_id.size() == 1) return by_id[0];
  if (by_id.size() > 1)
    throw BadInput(spec.path, "", "one run with id \"" + spec.run + "\"; several experiments hold one (" +
                                      by_id[0].string() + ", " + by_id[1].string() +
                                      "): give the experiment's folder instead of " + spec.path);
  if (found.empty())
    throw BadInput(spec.path, "", "a run folder <experiment>/<run>/metrics whose run id or mlflow.runName is \"" +
                                      spec.run + "\" (none is)");
  if (found.size() > 1)
    throw BadInput(spec.path, "", "one run named \"" + spec.run + "\"; several are (" + found[0].string() + ", " +
                                      found[1].string() + "): give --run its id");
  return found[0];
}

// A metric key as a relative path under metrics/ (MLflow keeps '/' as
// folders); exit 2 for one that would leave the folder.
fs::path key_path(const std::string& key, const std::string& path) {
  fs::path p(key);
  bool ok = !key.empty() && key.front() != '/' && key.back() != '/' && key.find("//") == std::string::npos;
  for (const auto& part : p) ok = ok && !part.empty() && part != "." && part != "..";
  if (!ok) throw BadInput(path, "key '" + key + "'", "an MLflow metric key (no empty, '.' or '..' parts)");
  return p;
}

// Every metric file's key under `metrics` (at most 1000), for "did you mean".
void note_present_keys(const fs::path& metrics, SeriesSet& set) {
  std::error_code ec;
  size_t n = 0;
  for (fs::recursive_directory_iterator it(metrics, ec), end; !ec && it != end && n < 1000; it.increment(ec), ++n)
    if (it->is_regular_file(ec)) {
      std::string key = it->path().lexically_relative(metrics).generic_string();
      if (set.find(key) < 0) set.note_unrequested(key);
    }
}

// One metrics/<key> file: "<timestamp> <value> [<step>]" lines.
void read_metric_file(const std::string& file, std::vector<Point>& points) {
  LineReader lines(file);  // one CR before the LF is dropped there, no more
  // MLflow ends every line with "\n": a last line without one was cut ("... 0.001 10" to "... 0.001 1" reads as
  // another step).
  lines.require_final_newline();
  std::string_view line;
  size_t first_count = 0;   // MLflow writes 3 fields (2 before steps existed), the same on every line
  uint64_t first_line = 0;
  while (lines.next(line)) {
    if (line.empty()) continue;
    uint64_t n = lines.line_number();
    std::string_view fields[4];
    size_t count = 0, at = 0;
    while (at < line.size() && count < 4) {
      size_t end = line.find(' ', at);
      if (end == std::string_view::npos) end = line.size();
      fields[count++] = line.substr(at, end - at);
      at = end + 1;
    }
    int64_t timestamp = 0, step = 0;
    double value;
    auto where = [n] { return "line " + std::to_string(n); };  // for a message only
    if (count < 2 || count > 3 || at < line.size() || fields[0].empty() || line.back() == ' ')
      throw BadInput(file, where(), "\"<timestamp> <value> <step>\" (MLflow's metric file line)");
    if (!decimal_step(fields[0], timestamp))
      throw BadInput(file, where(), "a timestamp in milliseconds first, got '" + std::string(fields[0]) + "'");
    if (!float_repr(fields[1], value))
      throw BadInput(file, where(), "a number after the timestamp, got '" + std::string(fields[1]) + "'");
    if (count == 3 && !decimal_step(fields[2], step))
      throw BadInput(file, where(), "a step of 0 or more last, got '" + std::string(fields[2]) + "'");
    if (first_count == 0) {
      first_count = count;
      first_line = n;
    } else if (count != first_count) {
      throw BadInput(file, where(), std::to_string(first_count) + " fields as on line " + std::to_string(first_line) +
                                      ", got " + std::to_string(count) + " (a line cut short?)");
    }
    if (n == kExtrapolateAfterLines && lines.offset() < lines.file_bytes()) {  // room for the whole file: no doubling
      double estimate = static_cast<double>(points.size()) *
                        (static_cast<double>(lines.file_bytes()) / static_cast<double>(lines.offset())) * 1.125;
      points.reserve(static_cast<size_t>(std::min(estimate, static_cast<double>(kMaxSeriesValues))) + 16);
    }
    points.push_back({step, timestamp, n, value});
  }
}

std::map<std::string, Series> read_mlflow_files(const MetricsSpec& spec) {
  fs::path run = run_folder(spec);
  fs::path metrics = run / "metrics";
  IngestSources sources("line");
  SeriesSet set(spec.series, "key", sources);
  note_present_keys(metrics, set);
  std::vector<Point> points;  // one file's at a time, the room reused
  for (size_t i = 0; i < set.size(); ++i) {
    fs::path file = metrics / key_path(set.key(i), spec.path);
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;  // finish() names it, with the keys present
    uint32_t index = sources.add(file.string());
    set.at(i).begin_file(index);
    read_metric_file(file.string(), points);
    add_in_order(set, i, points);
  }
  return set.finish(run.string(), "in " + metrics.string());
}

}  // namespace

std::map<std::string, Series> read_mlflow_metrics(const MetricsSpec& spec) {
  std::error_code ec;
  fs::file_status st = fs::status(spec.path, ec);
  if (ec || !fs::exists(st))
    throw BadInput(spec.path, "", "an MLflow tracking database (SQLite) or run folder (it does not exist)");
  if (fs::is_directory(st)) return read_mlflow_files(spec);
  if (!fs::is_regular_file(st) || !is_sqlite_file(spec.path))
    throw BadInput(spec.path, "", "an MLflow tracking database (an SQLite file, \"SQLite format 3\" header) or a run's "
                                  "folder (mlruns/<experiment>/<run>)");
  return read_mlflow_database(spec);
}

}  // namespace lockstep

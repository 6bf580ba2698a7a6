// The nightly's memory: one ledger entry per smoke and run, appended to
// <dir>/<smoke>.jsonl (docs/history.md), so a curve that drifts night by
// night inside its tolerance is seen before the night it fails.
//
//   LedgerEntry e = ledger_entry(run, &verdict, golden_hash, ci_facts_from_environment(), utc_now());
//   append_entry("history", e);                 // atomic; a run already there: exit 2
//   LedgerRead r = read_ledger("history/digits-cnn.jsonl", /*skip_bad=*/false);
//
// An entry holds what a later night needs to say what moved and what else
// changed: when, which commit and CI job, the platform, the verdict and its
// exit class, the determinism-relevant fingerprint and the inputs, every series (long ones
// as kLedgerPoints evenly spaced steps plus the content hash of all of
// them) with the share of its tolerance it used, each batch probe's content
// hash, the median step time, the peak memory, and the golden's content
// hash. One JSON object per line; the file only ever grows (rewritten whole
// through a temporary file and a rename, so a kill leaves the old or the
// new file), and each line carries the XXH3-128 of the line before it
// (`prev`), so a line lost from the middle is exit 2 where it was. Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compare/verdict.h"
#include "record/run_record.h"

namespace lockstep {

/// Most points an entry keeps of one series (evenly spaced, first and last
/// included); its content hash covers every value.
inline constexpr size_t kLedgerPoints = 256;
/// Most batch probe hashes an entry keeps (the first ones).
inline constexpr size_t kLedgerProbes = 4096;
/// Most series an entry keeps (by name).
inline constexpr size_t kLedgerSeries = 64;
/// At most this many config value fields per line, each path and value at
/// most kLedgerConfigValue bytes (a longer one is kept as its XXH3-64):
/// enough to name the field a config-only edit changed. Fingerprint names
/// and values, the stack label, commit and branch are held to the same
/// length.
inline constexpr size_t kLedgerConfigFields = 512;
inline constexpr size_t kLedgerConfigValue = 200;
/// Longest ledger line read (an entry at the caps above is under 1 MiB).
inline constexpr size_t kLedgerLineBytes = size_t{4} << 20;

/// The CI job a run came from ($CI_COMMIT_SHA, $CI_PIPELINE_ID, $CI_JOB_ID,
/// $CI_JOB_URL, $CI_RUNNER_DESCRIPTION in GitLab); empty when not in CI.
struct CiFacts {
  std::string pipeline, job, job_url, runner;
  std::string report_url;  ///< where this night's report is published, when known
};

/// Whether two CiFacts name one job (every field equal).
inline bool operator==(const CiFacts& a, const CiFacts& b) {
  return std::tie(a.pipeline, a.job, a.job_url, a.runner, a.report_url) ==
         std::tie(b.pipeline, b.job, b.job_url, b.runner, b.report_url);
}

/// CiFacts from GitLab's variables in this process's environment; a report
/// URL from $LOCKSTEP_REPORT_URL.
CiFacts ci_facts_from_environment();

/// One series as a ledger keeps it.
struct LedgerSeries {
  std::vector<int64_t> steps;   ///< the kept points' step numbers
  std::vector<double> values;   ///< their values
  uint64_t count = 0;           ///< values in the run's series
  std::string xxh3;             ///< XXH3-128 of every step and value (series_content_hash)
  /// The share of its tolerance the series used against the golden
  /// (SeriesResult::max_use; +inf beyond any); NaN when not compared.
  double use;
  std::string rule;             ///< the rule applied ("" when not compared)
};

/// One smoke run, as the ledger keeps it.
struct LedgerEntry {
  std::string run_id;        ///< XXH3-128 of the run record's canonical JSON (and instance): one entry per run
  /// XXH3-128 of the run record's canonical JSON alone ("" for a night
  /// without a record, or a ledger written before it was kept): `history
  /// add` enters a record once, even one a check entered with its instance.
  std::string record_xxh3;
  std::string time_utc;      ///< ISO 8601, when the entry was made
  std::string smoke, platform;
  std::string stack;         ///< the run's stack label ("" none; "stack" absent in the line): history keeps each apart
  std::string commit, branch;  ///< git.commit / git.branch of the run's fingerprint ("" unknown)
  CiFacts ci;
  std::string verdict;       ///< "pass", "fail", "nondeterministic", "bad-input", "environment", "not compared"
  int exit_code = 0;
  std::string lane;          ///< lane_name() of the comparison; "" when not compared
  std::string golden;        ///< the golden's content_hash ("" when none was compared)
  std::map<std::string, std::string> fingerprint;  ///< the determinism-relevant fields and the inputs
  /// The run's config values by JSON path ("optimizer.lr" -> "0.05"; the
  /// record's `config`), so that history names the field a config-only
  /// edit changed; empty for a line written before it was kept ("config"
  /// absent in the line).
  std::map<std::string, std::string> config;
  std::map<std::string, LedgerSeries> series;
  std::vector<std::string> probes;  ///< each batch probe's inputs content hash, in order
  double step_time_median_s;        ///< NaN when the record has no step times
  int64_t peak_rss_bytes = -1;
  /// The XXH3-128 (ledger_line_hash) of the ledger line before this one, ""
  /// on the first line: the chain that makes a deleted or replaced line
  /// exit 2. Set by append_entry and merge_ledgers; absent (nullopt) in an
  /// entry not yet appended and in lines written before the chain was kept.
  std::optional<std::string> prev;
};

/// XXH3-128 (32 hex digits) of a series' steps (step_numbers) and values,
/// as little-endian int64 and binary64.
std::string series_content_hash(const Series& series);

/// The entry for `run`, made at `time_utc` (ISO 8601): compared by
/// `verdict` (nullptr: not compared, e.g. `history add` of a record made
/// elsewhere) with the golden whose content hash is `golden_hash`. Keeps at
/// most kLedgerSeries series and kLedgerProbes probe hashes. Its run_id
/// hashes the record with `instance`, what tells this run from another that
/// made the same record (a trainer's records of one commit and stack are
/// bit-identical night after night): `check` gives its time and process,
/// `history add` nothing, so one record file is one run.
LedgerEntry ledger_entry(const RunRecord& run, const Verdict* verdict, const std::string& golden_hash,
                         const CiFacts& ci, const std::string& time_utc, const std::string& instance = "");

/// The entry for a check of `smoke` that stopped before a record was made
/// (exit 2, 3 or 4 before any comparison): its verdict and exit class, no
/// series; its run_id hashes the smoke, the verdict's message and
/// `instance` (as ledger_entry's).
LedgerEntry stopped_entry(const std::string& smoke, const Verdict& verdict, const CiFacts& ci,
                          const std::string& time_utc, const std::string& instance);

/// The ledger file of `smoke` in `dir`: <dir>/<smoke>.jsonl.
std::string ledger_path(const std::string& dir, const std::string& smoke);

/// Whether a file name is a ledger's: <smoke>.jsonl, not hidden.
bool is_ledger_file_name(const std::string& name);

/// The ledgers in `dir`: its <smoke>.jsonl files (not hidden ones), sorted;
/// none when `dir` is absent.
std::vector<std::string> ledger_files(const std::string& dir);

/// One entry as its ledger line (no newline).
std::string ledger_line(const LedgerEntry& entry);

/// XXH3-128 (32 hex digits) of one ledger line's bytes (no newline): the
/// next line's `prev`.
std::string ledger_line_hash(const std::string& line);

/// Parses one ledger line; throws exit-2 Error naming `file`, the line
/// and the field for anything malformed, out of range or unknown.
LedgerEntry parse_ledger_line(const std::string& line, const std::string& file, uint64_t line_number);

/// A ledger read back.
struct LedgerRead {
  std::vector<LedgerEntry> entries;  ///< in file order
  std::vector<std::string> skipped;  ///< "<file>: line N: <why>" (only with skip_bad)
  /// XXH3-128 of the last line (ledger_line_hash), the `prev` of a line
  /// appended next; "" when the ledger has none.
  std::string last_line_hash;
};

/// Reads a ledger file. A malformed, truncated, blank or hand-edited line is
/// exit 2 naming the file and line, unless `skip_bad`: then it is left out and
/// said in `skipped`. A line whose `prev` is not the hash of the line
/// before it (a line deleted between them, or that line replaced) is exit 2
/// naming both lines, unless `skip_bad`: then its entry is read and the gap
/// said in `skipped`. Lines without `prev` (written before the chain) are
/// not checked; the last lines cut away leave no trace. Two entries of one
/// run are exit 2 either way.
LedgerRead read_ledger(const std::string& file, bool skip_bad);

/// What to do about a damaged ledger in folder `dir`, appended to the exit-2
/// message of a strict read: "; `lockstep history DIR --skip-bad` reads
/// the other lines, naming each one it leaves out" and, when `appending`,
/// that a night is entered only into a ledger that reads whole.
std::string damaged_ledger_hint(const std::string& dir, bool appending);

/// read_ledger(file, false) for a command about to add to the ledger
/// (check --history, history add, push, pull): its exit-2 errors carry
/// damaged_ledger_hint(dir, true).
LedgerRead read_ledger_to_append(const std::string& file, const std::string& dir);

/// The union of two versions of one ledger's text (`ours`, being pushed,
/// and `theirs`, the remote's or the local branch's, as `theirs_is` says:
/// both append-only), each run once, in time order (their entries first at
/// equal times), chained anew (each `prev` the hash of the merged line
/// before it). Throws exit-2 Error naming `name`, the side ("name (the
/// remote's)") and the line for a malformed line or a broken chain.
std::string merge_ledgers(const std::string& name, const std::string& ours, const std::string& theirs,
                          const std::string& theirs_is = "the remote's");

/// Appends `entry` to its smoke's ledger in `dir` (created when absent),
/// atomically, holding `dir`'s DirectoryLock: concurrent appends all land. Throws exit-2 Error when the ledger already holds the run
/// (its run_id) or cannot be read, exit 3 when it cannot be written.
/// `on_wait(pid)` is called once when another process holds the lock
/// (DirectoryLock), before waiting for it.
void append_entry(const std::string& dir, const LedgerEntry& entry, const std::function<void(int)>& on_wait = {});

}  // namespace lockstep

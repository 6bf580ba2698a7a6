// The nightly ledger: an entry keeps what a later night compares (long
// series as evenly spaced points plus the hash of all of them, the share
// of the tolerance used, probe hashes, the determinism-relevant stack),
// round-trips through its line exactly, refuses a run entered twice, and a
// truncated or hand-edited line is exit 2 naming the file and line unless
// skipped on request.
#include "history/ledger.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>

#include "../record_builder.h"
#include "compare/compare.h"
#include "core/json_io.h"
#include "core/hash.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using testing::make_probe;
using testing::make_record;

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-ledger-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Ledger, AnEntryKeepsTheRunsCurvesStackAndUseAndRoundTrips) {
  std::vector<double> loss(1000);
  for (size_t i = 0; i < loss.size(); ++i) loss[i] = 2.0 - 0.001 * static_cast<double>(i);
  RunRecord golden = make_record(loss);
  golden.probes = {make_probe(0, 0.5, std::string(32, 'a')), make_probe(1, 0.7, std::string(32, 'b'))};
  golden.fingerprint["git.commit"] = {"0123456789abcdef0123456789abcdef01234567", false};
  golden.resources.step_time_s = {0.3, 0.1, 0.2};
  golden.resources.peak_rss_bytes = 1 << 20;
  golden.config = {{"optimizer.lr", "0.05"}, {"trainer.command.0", std::string(300, 'p')},
                   {std::string(300, 'k'), "1"}};
  RunRecord run = golden;
  run.series["loss"].values[500] += 5e-5;  // 5e-5 of an allowed 1e-6 + 1e-4 * 1.5 = 1.51e-4: use 0.331
  TolerancePolicy policy;
  policy.same_stack_exact = false;
  policy.series_default = Tolerance::close(1e-6, 1e-4);
  Verdict v = compare_records(run, golden, policy);
  ASSERT_TRUE(v.passed());
  CiFacts ci{"77", "901", "https://gitlab.example/j/901", "runner-3", ""};
  LedgerEntry e = ledger_entry(run, &v, std::string(32, 'c'), ci, "2026-12-03T02:00:00Z");
  EXPECT_EQ(e.smoke, "unit");
  EXPECT_EQ(e.verdict, "pass");
  EXPECT_EQ(e.lane, "same-stack");
  EXPECT_EQ(e.commit, "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(e.fingerprint.count("torch.version"), 1u);
  EXPECT_EQ(e.fingerprint.count("os.kernel"), 0u) << "informational fields stay out";
  // The config values, to name a config-only edit; a long value by its hash.
  EXPECT_EQ(e.config.at("optimizer.lr"), "0.05");
  EXPECT_EQ(e.config.at("trainer.command.0"), "xxh3 " + hex64(xxh3_64(std::string(300, 'p'))));
  EXPECT_EQ(e.config.at("xxh3 " + hex64(xxh3_64(std::string(300, 'k')))), "1");  // a long path too
  const LedgerSeries& s = e.series.at("loss");
  ASSERT_EQ(s.values.size(), kLedgerPoints);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.steps.front(), 0);
  EXPECT_EQ(s.steps.back(), 999);
  EXPECT_EQ(s.values.back(), run.series["loss"].values[999]);
  EXPECT_EQ(s.xxh3, series_content_hash(run.series["loss"]));
  EXPECT_NE(s.xxh3, series_content_hash(golden.series["loss"]));
  float g = static_cast<float>(loss[500]);
  double allowed = 1e-6 + 1e-4 * std::fabs(static_cast<double>(g));
  EXPECT_DOUBLE_EQ(s.use, std::fabs(run.series["loss"].values[500] - static_cast<double>(g)) / allowed);
  EXPECT_EQ(e.probes, (std::vector<std::string>{std::string(32, 'a'), std::string(32, 'b')}));
  EXPECT_DOUBLE_EQ(e.step_time_median_s, 0.2);
  EXPECT_EQ(e.peak_rss_bytes, 1 << 20);

  LedgerEntry back = parse_ledger_line(ledger_line(e), "l.jsonl", 1);
  EXPECT_EQ(ledger_line(back), ledger_line(e));
  EXPECT_EQ(back.config, e.config);
  std::string long_value = ledger_line(e);
  long_value.replace(long_value.find("\"0.05\""), 6, "\"" + std::string(201, '5') + "\"");
  EXPECT_HAS(error_of([&] { parse_ledger_line(long_value, "l.jsonl", 7); }),
             "l.jsonl: line 7: config.optimizer.lr: expected a value of at most 200 bytes");
  std::string long_key = ledger_line(e);
  long_key.replace(long_key.find("\"optimizer.lr\""), 14, "\"" + std::string(201, 'o') + "\"");
  EXPECT_HAS(error_of([&] { parse_ledger_line(long_key, "l.jsonl", 8); }),
             "l.jsonl: line 8: config: expected config value paths of 1 to 200 bytes, got one of 201");
  // A CI variable that is not UTF-8 is written escaped, never an error.
  LedgerEntry odd = e;
  odd.ci.job_url = "http://x/\xff";
  EXPECT_EQ(parse_ledger_line(ledger_line(odd), "l.jsonl", 9).ci.job_url.find('\xff'), std::string::npos);
  EXPECT_EQ(back.series.at("loss").values, s.values);
  EXPECT_EQ(back.ci.runner, "runner-3");

  LedgerEntry alone = ledger_entry(run, nullptr, "", ci, "2026-12-03T02:00:00Z");
  EXPECT_EQ(alone.verdict, "not compared");
  EXPECT_TRUE(std::isnan(alone.series.at("loss").use));
  EXPECT_EQ(alone.run_id, e.run_id) << "the same run";

  // A fingerprint value of megabytes (a forged or runaway record) is kept
  // as its hash, as a long config value is: the line stays far under the
  // reader's cap, so the ledger keeps taking nights.
  RunRecord big = run;
  big.fingerprint["torch.version"] = {std::string(5 << 20, 'x'), true};
  big.fingerprint["git.branch"] = {std::string(300, 'b'), false};
  LedgerEntry bounded = ledger_entry(big, nullptr, "", ci, "2026-12-03T02:00:00Z");
  EXPECT_EQ(bounded.fingerprint.at("torch.version"), "xxh3 " + hex64(xxh3_64(std::string(5 << 20, 'x'))));
  EXPECT_EQ(bounded.branch, "xxh3 " + hex64(xxh3_64(std::string(300, 'b'))));
  EXPECT_LT(ledger_line(bounded).size(), size_t{1} << 20);
}

TEST(Ledger, AppendsAndRefusesARunEnteredTwice) {
  fs::path d = scratch("append");
  RunRecord a = make_record({2.5, 2.25}), b = make_record({2.5, 2.0});
  append_entry(d.string(), ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z"));
  append_entry(d.string(), ledger_entry(b, nullptr, "", {}, "2026-12-02T02:00:00Z"));
  std::string file = ledger_path(d.string(), "unit");
  EXPECT_EQ(read_ledger(file, false).entries.size(), 2u);
  std::string again = error_of([&] { append_entry(d.string(), ledger_entry(a, nullptr, "", {}, "2026-12-03T02:00:00Z")); });
  EXPECT_HAS(again, file + ": run_id: expected a run not yet entered; run ");
  EXPECT_HAS(again, "(2026-12-01T02:00:00Z) is already in the ledger");
  EXPECT_EQ(read_ledger(file, false).entries.size(), 2u) << "nothing written";
  // A ledger holding another smoke's night is refused before anything is
  // appended to it.
  fs::copy_file(file, (d / "other.jsonl").string());
  RunRecord c = make_record({2.5, 1.5});
  c.smoke = "other";
  std::string foreign = error_of([&] { append_entry(d.string(), ledger_entry(c, nullptr, "", {}, "2026-12-04T02:00:00Z")); });
  EXPECT_HAS(foreign, (d / "other.jsonl").string() + ": line 1: smoke: expected \"other\", the smoke this ledger is "
                      "named for; got \"unit\"");
  EXPECT_EQ(read_ledger(file, false).entries.size(), 2u);
  fs::remove_all(d);
}

// Adds from many processes at once (two nightlies, `history add` in a
// loop) all land: each reads, appends and renames under the folder's lock.
TEST(Ledger, ConcurrentAppendsFromManyProcessesKeepEveryLine) {
  fs::path d = scratch("concurrent");
  constexpr int kWriters = 16;
  std::vector<pid_t> children;
  for (int i = 0; i < kWriters; ++i) {
    pid_t child = ::fork();
    if (child == 0) {
      int code = 0;
      try {
        RunRecord r = make_record({2.5, 2.0 + 0.01 * i});
        append_entry(d.string(), ledger_entry(r, nullptr, "", {}, "2026-12-01T02:00:" + std::to_string(10 + i) + "Z"));
      } catch (...) {
        code = 1;
      }
      ::_exit(code);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(read_ledger(ledger_path(d.string(), "unit"), false).entries.size(), static_cast<size_t>(kWriters));
  EXPECT_FALSE(fs::exists(d / ".lockstep.lock"));
  fs::remove_all(d);
}

TEST(Ledger, TruncatedOrEditedLinesAreExit2NamingTheLineUnlessSkipped) {
  fs::path d = scratch("bad");
  RunRecord a = make_record({2.5, 2.25}), b = make_record({2.5, 2.0}), c = make_record({2.5, 1.5});
  for (auto [r, t] : {std::pair<RunRecord*, const char*>{&a, "2026-12-01T02:00:00Z"}, {&b, "2026-12-02T02:00:00Z"},
                      {&c, "2026-12-03T02:00:00Z"}})
    append_entry(d.string(), ledger_entry(*r, nullptr, "", {}, t));
  std::string file = ledger_path(d.string(), "unit");
  std::string text = read_file(file);
  size_t first_end = text.find('\n'), second_end = text.find('\n', first_end + 1);
  std::string edited = text.substr(0, first_end + 1) +
                       std::string(text.substr(first_end + 1, second_end - first_end)).replace(
                           text.substr(first_end + 1).find("\"verdict\":\"not compared\""), 24, "\"verdict\":\"passed\"    ") +
                       text.substr(second_end + 1);
  write_file_atomically(file, edited);
  std::string e = error_of([&] { read_ledger(file, false); });
  EXPECT_HAS(e, file + ": line 2: verdict: expected one of");
  // A command about to add a night says the way on.
  EXPECT_HAS(error_of([&] { read_ledger_to_append(file, d.string()); }),
             "; `lockstep history " + d.string() + " --skip-bad` reads the other lines, naming each one it leaves "
             "out; a night is entered only into a ledger that reads whole: restore this one (its history branch, "
             "`lockstep history pull`, or the CI cache), or move it aside");
  LedgerRead skipped = read_ledger(file, true);
  EXPECT_EQ(skipped.entries.size(), 2u);
  ASSERT_EQ(skipped.skipped.size(), 2u);
  EXPECT_HAS(skipped.skipped[0], "line 2");
  // Line 3 names the hash of line 2 as written: the edit shows there too.
  EXPECT_HAS(skipped.skipped[1], file + ": line 3: prev: expected " + ledger_line_hash(edited.substr(first_end + 1,
                                     edited.find('\n', first_end + 1) - first_end - 1)) + ", the XXH3-128 of line 2 before it; got ");

  write_file_atomically(file, text.substr(0, text.size() - 40));  // cut inside the last line
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }),
             file + ": line 3: expected a complete line ending in a newline (the file ends inside line 3)");
  EXPECT_EQ(read_ledger(file, true).entries.size(), 2u);

  // A byte-order mark an editor added is named at its byte, even on a
  // ledger of one line (whose hash no later line checks).
  for (const std::string& saved : {"\xEF\xBB\xBF" + text, "\xEF\xBB\xBF" + text.substr(0, first_end + 1)}) {
    write_file_atomically(file, saved);
    EXPECT_HAS(error_of([&] { read_ledger(file, true); }),
               file + ": line 1: byte 0: expected a ledger line ('{'), got a UTF-8 byte-order mark");
  }

  // A line emptied by hand: lockstep writes no blank line.
  write_file_atomically(file, text.substr(0, first_end + 1) + "\n" + text.substr(first_end + 1));
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }),
             file + ": line 2: expected an entry (lockstep writes no blank lines: was this line emptied?)");
  LedgerRead around_blank = read_ledger(file, true);
  EXPECT_EQ(around_blank.entries.size(), 3u);
  ASSERT_EQ(around_blank.skipped.size(), 1u);
  EXPECT_HAS(around_blank.skipped[0], file + ": line 2: expected an entry");

  write_file_atomically(file, text + text.substr(0, first_end + 1));  // night 1 entered again by hand
  EXPECT_HAS(error_of([&] { read_ledger(file, true); }), file + ": line 4: expected each run once; run ");

  // Cut to nothing: lockstep writes a ledger with its first night.
  write_file_atomically(file, "");
  EXPECT_EQ(error_of([&] { read_ledger(file, true); }),
            file + ": expected at least one night (lockstep never writes an empty ledger: was it truncated?)");
  // The last line (no later line's prev holds it) dated to sort last, or
  // filed under another device's platform: refused as it is read.
  nlohmann::json last = nlohmann::json::parse(text.substr(second_end + 1, text.size() - second_end - 2));
  nlohmann::json future = last;
  future["time"] = "2099-01-01T00:00:00Z";
  write_file_atomically(file, text.substr(0, second_end + 1) + future.dump() + "\n");
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }),
             file + ": line 3: time: expected a time at most a day ahead of this machine's clock (");
  nlohmann::json moved = last;
  moved["platform"] = "cuda-sm90";
  moved["fingerprint"]["device"] = "cpu";
  write_file_atomically(file, text.substr(0, second_end + 1) + moved.dump() + "\n");
  EXPECT_EQ(error_of([&] { read_ledger(file, false); }),
            file + ": line 3: platform: expected a platform key of the night's device cpu (\"cpu-...\"), got "
                   "\"cuda-sm90\"");

  // Every value of a short series is kept, so its hash is checked: a value
  // edited with the hash left stale, or a count that does not match the
  // values kept, is refused.
  std::string line1 = text.substr(0, first_end);
  nlohmann::json j = nlohmann::json::parse(line1);
  nlohmann::json stale = j;
  stale["series"]["loss"]["values"][1] = 2.125;
  write_file_atomically(file, stale.dump() + "\n");
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }),
             file + ": line 1: series.loss.xxh3: expected the XXH3-128 of the steps and values listed (every value "
                    "is kept); they do not hash to " + j["series"]["loss"]["xxh3"].get<std::string>() +
                    " (a value edited by hand?)");
  nlohmann::json counted = j;
  counted["series"]["loss"]["count"] = 99;
  write_file_atomically(file, counted.dump() + "\n");
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }),
             file + ": line 1: series.loss.count: expected the number of values kept (2): a series of at most 256 "
                    "keeps every value");
  fs::remove_all(d);
}

// The ledger append_entry writes for these lines' entries, in this order
// (chained).
std::string appended(const std::vector<std::string>& texts) {
  fs::path d = scratch("appended");
  for (const auto& text : texts) append_entry(d.string(), parse_ledger_line(text.substr(0, text.size() - 1), "t", 1));
  std::string out = read_file(ledger_path(d.string(), "unit"));
  fs::remove_all(d);
  return out;
}

// Each line carries the hash of the line before it: a line deleted from the
// middle or the start, or one replaced, is exit 2 where the chain breaks,
// naming both lines; --skip-bad reads on and says so. Lines written before
// the chain carry no prev and are read as they are.
TEST(Ledger, ALineDeletedFromTheMiddleOrTheStartBreaksTheChain) {
  fs::path d = scratch("chain");
  std::vector<std::string> lines;
  for (int night = 1; night <= 4; ++night) {
    RunRecord r = make_record({2.5, 2.0 + 0.125 * night});
    append_entry(d.string(), ledger_entry(r, nullptr, "", {}, "2026-12-0" + std::to_string(night) + "T02:00:00Z"));
  }
  std::string file = ledger_path(d.string(), "unit"), text = read_file(file);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(parse_ledger_line(lines[0], file, 1).prev, std::optional<std::string>(""));
  EXPECT_EQ(parse_ledger_line(lines[2], file, 3).prev, std::optional<std::string>(ledger_line_hash(lines[1])));
  EXPECT_EQ(read_ledger(file, false).entries.size(), 4u);

  write_file_atomically(file, lines[0] + "\n" + lines[1] + "\n" + lines[3] + "\n");  // night 3 deleted
  EXPECT_EQ(error_of([&] { read_ledger(file, false); }),
            file + ": line 3: prev: expected " + ledger_line_hash(lines[1]) + ", the XXH3-128 of line 2 before it; got " +
                ledger_line_hash(lines[2]) + ": a line between them was deleted, or line 2 was edited (the ledger is "
                "append-only)");
  LedgerRead read_on = read_ledger(file, true);
  EXPECT_EQ(read_on.entries.size(), 3u);
  ASSERT_EQ(read_on.skipped.size(), 1u);
  EXPECT_HAS(read_on.skipped[0], "(its entry is read; the lines lost are not)");
  // Nothing is appended to a ledger with a gap, nor merged over one.
  RunRecord five = make_record({2.5, 1.0});
  EXPECT_HAS(error_of([&] { append_entry(d.string(), ledger_entry(five, nullptr, "", {}, "2026-12-05T02:00:00Z")); }),
             file + ": line 3: prev: expected ");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", read_file(file), ""); }), "unit.jsonl: line 3: prev: expected ");

  write_file_atomically(file, lines[1] + "\n" + lines[2] + "\n");  // night 1 deleted
  EXPECT_EQ(error_of([&] { read_ledger(file, false); }),
            file + ": line 1: prev: expected \"\" on the first line; got " + ledger_line_hash(lines[0]) +
                ", the hash of a line before it: the ledger's first lines were deleted");

  // Lines from before the chain: read as they are; the next append chains on.
  std::string legacy;
  for (size_t i = 0; i < 2; ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    j.erase("prev");
    legacy += j.dump() + "\n";
  }
  write_file_atomically(file, legacy);
  EXPECT_EQ(read_ledger(file, false).entries.size(), 2u);
  append_entry(d.string(), ledger_entry(five, nullptr, "", {}, "2026-12-05T02:00:00Z"));
  std::string after = read_file(file);
  EXPECT_EQ(parse_ledger_line(after.substr(legacy.size(), after.size() - legacy.size() - 1), file, 3).prev,
            std::optional<std::string>(ledger_line_hash(legacy.substr(legacy.find('\n') + 1,
                                                                       legacy.size() - legacy.find('\n') - 2))));
  EXPECT_EQ(read_ledger(file, false).entries.size(), 3u);
  fs::remove_all(d);
}

// What the chain leaves to the reader's other rules: a line without prev
// after a chained one, a NaN beside an edited value (every NaN hashes as
// the one quiet NaN, so the series is still checked), a day the month does
// not have, and "\r\n" endings, said as such; a merge holds each side to
// the same rules.
TEST(Ledger, TheChainKeepsOnAndEveryLineIsHeldToItsOwnFields) {
  fs::path d = scratch("held");
  RunRecord a = make_record({2.5, 2.25}), b = make_record({2.5, std::nan("")});
  append_entry(d.string(), ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z"));
  append_entry(d.string(), ledger_entry(b, nullptr, "", {}, "2026-12-02T02:00:00Z"));
  std::string file = ledger_path(d.string(), "unit"), text = read_file(file);
  const size_t first_end = text.find('\n');
  const std::string line1 = text.substr(0, first_end), line2 = text.substr(first_end + 1, text.size() - first_end - 2);
  EXPECT_EQ(read_ledger(file, false).entries.size(), 2u);
  auto rewrite = [&](const std::string& second) { write_file_atomically(file, line1 + "\n" + second + "\n"); };

  nlohmann::json j = nlohmann::json::parse(line2);
  ASSERT_EQ(j["series"]["loss"]["values"][1], "nan");
  nlohmann::json unchained = j;
  unchained.erase("prev");
  rewrite(unchained.dump());
  EXPECT_EQ(error_of([&] { read_ledger(file, false); }),
            file + ": line 2: prev: expected the XXH3-128 of line 1 (every line after a chained one carries prev; "
                   "this one was written or edited by hand)");
  nlohmann::json edited = j;
  edited["series"]["loss"]["values"][0] = 0.5;
  rewrite(edited.dump());
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }), file + ": line 2: series.loss.xxh3: expected the XXH3-128");
  nlohmann::json no_day = j;
  no_day["time"] = "2026-02-30T02:00:00Z";
  rewrite(no_day.dump());
  EXPECT_HAS(error_of([&] { read_ledger(file, false); }), file + ": line 2: time: expected an ISO 8601 UTC time");
  rewrite(line2 + "\r");
  EXPECT_EQ(error_of([&] { read_ledger(file, false); }),
            file + ": line 2: expected a line ending in \"\\n\", got \"\\r\\n\" (converted by git's autocrlf or an "
                   "editor? `*.jsonl -text` in .gitattributes keeps ledgers as written)");
  // The remote's side as read_ledger holds it: no cut last line, no line over
  // the size limit.
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", text, text.substr(0, text.size() - 1)); }),
             "unit.jsonl (the remote's): line 2: expected a complete line ending in a newline");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", text, text + std::string(kLedgerLineBytes + 1, ' ') + "\n"); }),
             "unit.jsonl (the remote's): line 3: expected a line of at most 4 MiB");
  EXPECT_EQ(merge_ledgers("unit.jsonl", text, text), text);
  fs::remove_all(d);
}

// A line from before the chain hashed a NaN's own bits (torch's NaN is
// negative), which "nan" does not keep: it reads as it is, and a merge that
// chains it hashes it anew, so the merged ledger reads back. One record
// entered in two clones (`history add`, its time the only difference) is
// one run: the earlier entry is kept.
TEST(Ledger, MergesKeepLegacyNaNLinesAndOneRecordEnteredTwice) {
  RunRecord a = make_record({2.5, std::nan("")});
  nlohmann::json legacy = nlohmann::json::parse(ledger_line(ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z")));
  const std::string normalised = legacy["series"]["loss"]["xxh3"];
  legacy["series"]["loss"]["xxh3"] = std::string(32, 'f');  // as a raw-bits hash would differ
  const std::string old_text = legacy.dump() + "\n";
  fs::path d = scratch("legacy-nan");
  write_file_atomically(ledger_path(d.string(), "unit"), old_text);
  LedgerRead read = read_ledger(ledger_path(d.string(), "unit"), false);
  ASSERT_EQ(read.entries.size(), 1u);
  EXPECT_EQ(read.entries[0].series.at("loss").xxh3, normalised);
  std::string merged = merge_ledgers("unit.jsonl", old_text, "");
  EXPECT_EQ(parse_ledger_line(merged.substr(0, merged.size() - 1), "m", 1).series.at("loss").xxh3, normalised);
  write_file_atomically(ledger_path(d.string(), "unit"), merged);
  EXPECT_EQ(read_ledger(ledger_path(d.string(), "unit"), false).entries.size(), 1u);

  RunRecord b = make_record({2.5, 2.0});
  std::string early = ledger_line(ledger_entry(b, nullptr, "", {}, "2026-12-02T02:00:00Z")) + "\n";
  CiFacts job;
  job.job = "77";
  std::string late = ledger_line(ledger_entry(b, nullptr, "", job, "2026-12-03T02:00:00Z")) + "\n";
  EXPECT_EQ(merge_ledgers("unit.jsonl", late, early), appended({early}));
  EXPECT_EQ(merge_ledgers("unit.jsonl", early, late), appended({early}));

  // A run `check` entered (its id names the process too) was entered once:
  // its time or CI job edited on one side is refused, not merged away.
  LedgerEntry checked = ledger_entry(b, nullptr, "", job, "2026-12-04T02:00:00Z", "host 1234 2026-12-04T02:00:00Z");
  std::string genuine = ledger_line(checked) + "\n";
  LedgerEntry forged = checked;
  forged.time_utc = "2020-01-01T00:00:00Z";
  forged.ci.report_url = "https://evil.example/report";
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", genuine, ledger_line(forged) + "\n"); }),
             "unit.jsonl: run " + checked.run_id +
                 ": expected the run as the other side has it; the two sides disagree about its time or CI job");
  EXPECT_EQ(merge_ledgers("unit.jsonl", genuine, genuine), appended({genuine}));

  // A night dated ahead of this machine's clock (a day of skew allowed)
  // would take the end of the merged ledger, and its "last night": refused.
  RunRecord c = make_record({2.5, 1.5});
  LedgerEntry ahead = ledger_entry(c, nullptr, "", {}, "2099-01-01T00:00:00Z");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", early, ledger_line(ahead) + "\n"); }),
             ": line 1: time: expected a time at most a day ahead of this machine's clock (");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", early, ledger_line(ahead) + "\n"); }),
             "), got 2099-01-01T00:00:00Z: its runner's clock ran ahead, or the line was edited");
  LedgerEntry skewed = ledger_entry(c, nullptr, "", {}, utc_now(3600));  // an hour ahead: skew
  EXPECT_NO_THROW(merge_ledgers("unit.jsonl", early, ledger_line(skewed) + "\n"));
  fs::remove_all(d);
}

// Two jobs' versions of one ledger (a branch store's merge): each run
// once, in time order, chained anew.
TEST(Ledger, TwoVersionsMergeIntoTheirUnionInTimeOrder) {
  RunRecord a = make_record({2.5, 2.25}), b = make_record({2.5, 2.0}), c = make_record({2.5, 1.5});
  std::string night1 = ledger_line(ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z")) + "\n";
  std::string night2b = ledger_line(ledger_entry(b, nullptr, "", {}, "2026-12-02T02:00:00Z")) + "\n";
  std::string night2c = ledger_line(ledger_entry(c, nullptr, "", {}, "2026-12-02T03:00:00Z")) + "\n";
  EXPECT_EQ(merge_ledgers("unit.jsonl", night1 + night2c, night1 + night2b), appended({night1, night2b, night2c}));
  EXPECT_EQ(merge_ledgers("unit.jsonl", night1, ""), appended({night1}));
  // Either side chained already: the merged chain is the same.
  EXPECT_EQ(merge_ledgers("unit.jsonl", appended({night1, night2c}), appended({night1, night2b})),
            appended({night1, night2b, night2c}));
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", night1, "{}\n"); }), "unit.jsonl (the remote's): line 1: ");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", night1, "{}\n", "the local branch lockstep-history"); }),
             "unit.jsonl (the local branch lockstep-history): line 1: ");
  // One run that the two sides tell differently: refused, never a silent pick.
  std::string edited = night1;
  edited.replace(edited.find("\"peak_rss_bytes\":-1"), 19, "\"peak_rss_bytes\":77");
  EXPECT_HAS(error_of([&] { merge_ledgers("unit.jsonl", edited, night1); }), "the two sides disagree about it");
  EXPECT_HAS(error_of([&] { merge_ledgers("other.jsonl", night1, ""); }),
             "other.jsonl: line 1: smoke: expected \"other\", the smoke this ledger is named for; got \"unit\"");
  // A line written before record_xxh3 was kept is the same run as the line
  // with it: merged into the line that has it.
  LedgerEntry old = parse_ledger_line(night1, "unit.jsonl", 1);
  ASSERT_EQ(old.record_xxh3.size(), 32u);
  old.record_xxh3.clear();
  nlohmann::json older = nlohmann::json::parse(ledger_line(old));
  older.erase("record_xxh3");
  EXPECT_EQ(merge_ledgers("unit.jsonl", older.dump() + "\n", night1), appended({night1}));
  EXPECT_EQ(merge_ledgers("unit.jsonl", night1, older.dump() + "\n"), appended({night1}));
}

// A run entered by a check carries its instance in its run id, but its
// record's own hash is the record's alone.
TEST(Ledger, TheRecordHashLeavesTheInstanceOut) {
  RunRecord a = make_record({2.5, 2.25});
  LedgerEntry plain = ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z");
  LedgerEntry checked = ledger_entry(a, nullptr, "", {}, "2026-12-01T02:00:00Z", "2026-12-01T02:00:00Z pid 7 job 9");
  EXPECT_NE(plain.run_id, checked.run_id);
  EXPECT_EQ(plain.record_xxh3, checked.record_xxh3);
  EXPECT_EQ(plain.record_xxh3, plain.run_id);
}

}  // namespace
}  // namespace lockstep

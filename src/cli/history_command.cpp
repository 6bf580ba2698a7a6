// `lockstep history`: the nightly ledgers read back, and records made
// elsewhere entered into them. The ledger and the analysis are
// history/ledger.h and history/history.h; nothing is decided here.
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"
#include "history/history.h"
#include "history/ledger.h"
#include "machine/git_branch_store.h"
#include "record/run_record.h"
#include "smoke/golden_store.h"

namespace lockstep {

namespace fs = std::filesystem;

int history_command(const HistoryOptions& o) {
  std::vector<SmokeHistory> h;
  try {
    h = load_history(o.dir, o.smoke, o.skip_bad);
  } catch (const Error& e) {
    // A ledger's own damage ("<dir>/<smoke>.jsonl: line 7: ..."), not a missing folder or smoke.
    if (o.skip_bad || e.code() != ExitCode::kBadInput || std::string(e.what()).find(".jsonl: ") == std::string::npos)
      throw;
    throw Error(ExitCode::kBadInput, e.what() + damaged_ledger_hint(o.dir, false));
  }
  // A report never lands on a ledger it read, on another ledger of the
  // folder, or on a golden.
  std::vector<std::string> ledgers;
  for (const auto& s : h) ledgers.push_back(s.file);
  for (const std::string* out : {&o.json_out, &o.html_out}) {
    if (out->empty()) continue;
    if (fs::is_directory(*out)) throw BadUsage(*out + ": is a folder; name a file to write");
    refuse_overwriting_inputs(*out, ledgers);
    if (fs::path(*out).extension() == ".jsonl" &&
        fs::weakly_canonical(fs::absolute(*out)).parent_path() == fs::weakly_canonical(fs::absolute(o.dir)))
      throw BadUsage(*out + ": a report would stand among the ledgers of " + o.dir + " as one; name another file");
    refuse_overwriting_a_golden(*out, *out == o.json_out ? "the --json report" : "the --html page");
    if (*out == o.json_out) require_report_file("--json", *out, "\"lockstep_report\": \"history\"", ledgers);
    else require_report_file("--html", *out, "<title>lockstep history</title>", ledgers);
  }
  std::cout << render_history_text(h);
  if (!o.json_out.empty()) write_file_atomically(o.json_out, render_history_json(h));
  if (!o.html_out.empty()) write_file_atomically(o.html_out, render_history_html(h));
  if (!o.json_out.empty()) std::cout << "history: JSON " << o.json_out << "\n";
  if (!o.html_out.empty()) std::cout << "history: HTML " << o.html_out << "\n";
  return 0;
}

namespace {

// A check's own records beside its report.json (gate/check.cpp names them):
// its run 1 is the night; its repeats, reruns, resumed run, variants and
// data-only pass are that same night seen again. What `record` is, or ""
// when it is none of them.
std::string check_repeat_kind(const std::string& record) {
  const fs::path p(record);
  std::error_code ec;
  if (!fs::exists(p.parent_path() / "report.json", ec)) return "";
  const std::string name = p.filename().string();
  auto numbered = [&](const std::string& prefix) {
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + 5 || name.substr(name.size() - 5) != ".json")
      return false;
    const std::string n = name.substr(prefix.size(), name.size() - prefix.size() - 5);
    return n.find_first_not_of("0123456789") == std::string::npos;
  };
  if (numbered("run-") && name != "run-1.json") return "a repeat run";
  if (numbered("rerun-")) return "a rerun";
  if (name == "resumed.json") return "the resumed run";
  if (name == "data-only.json") return "the data-only pass";
  if (name.rfind("variant-", 0) == 0 && p.extension() == ".json") return "an equivalence lane's variant run";
  return "";
}

}  // namespace

int history_add_command(const HistoryAddOptions& o) {
  // Every record first: one that cannot be read adds none.
  std::vector<RunRecord> records;
  for (const auto& path : o.records) {
    if (std::string kind = check_repeat_kind(path); !kind.empty()) {
      const std::string dir = fs::path(path).parent_path().string();
      throw BadInput(path, "", "a night's run record; this is " + kind + " of the check whose report is " +
                                   (fs::path(dir) / "report.json").string() + ": its night is its run 1 (`lockstep "
                                   "history add " + (fs::path(dir) / "run-1.json").string() +
                                   "`, unless check --history entered it); nothing was added");
    }
    try {
      records.push_back(read_run_record(path));
    } catch (const Error& e) {
      // A golden is entered by the check that compares a run with it.
      if (e.code() == ExitCode::kBadInput && std::string(e.what()).find("content_hash") != std::string::npos)
        throw BadInput(path, "", "a run record (lockstep run or import --record); this is a golden, whose nights are "
                                 "the checks against it (check --history)");
      throw;
    }
  }
  CiFacts ci = ci_facts_from_environment();
  std::vector<LedgerEntry> entries;
  std::set<std::string> ids;
  for (size_t i = 0; i < records.size(); ++i) {
    entries.push_back(ledger_entry(records[i], nullptr, "", ci, utc_now()));
    ledger_path(o.to, entries.back().smoke);  // a smoke name that makes a ledger's file name
    if (!ids.insert(entries.back().run_id).second)
      throw BadUsage(o.records[i] + ": the same run as an earlier RECORD (run " + entries.back().run_id.substr(0, 12) +
                     "); nothing was added");
    std::error_code ec;
    std::string file = ledger_path(o.to, entries.back().smoke);
    if (fs::exists(file, ec))
      for (const LedgerEntry& e : read_ledger_to_append(file, o.to).entries)
        if (e.run_id == entries.back().run_id || (!e.record_xxh3.empty() && e.record_xxh3 == entries.back().record_xxh3))
          throw BadInput(file, "run_id", "a run not yet entered; " + o.records[i] + " (run " + e.run_id + ", " +
                                             e.time_utc + ") is already in the ledger; nothing was added");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    append_entry(o.to, entries[i], [&](int pid) {
      std::cout << "history: waiting for process " << pid << ", which writes to " << o.to << "\n" << std::flush;
    });
    std::cout << "history: " << o.records[i] << " -> " << ledger_path(o.to, entries[i].smoke) << " (run "
              << entries[i].run_id.substr(0, 12) << ", not compared)\n";
  }
  return 0;
}

namespace {

BranchStoreOptions store_options(const HistorySyncOptions& o, const std::string& message) {
  BranchStoreOptions s;
  s.repo = o.repo;
  s.branch = o.branch;
  s.remote = o.remote;
  s.message = message;
  return s;
}

// The ledgers in `dir` (<smoke>.jsonl), name -> text; each is read strictly first.
std::map<std::string, std::string> ledgers_in(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& file : ledger_files(dir)) {
    std::string name = fs::path(file).filename().string();
    for (const LedgerEntry& e : read_ledger_to_append(file, dir).entries)
      if (e.smoke + ".jsonl" != name)
        throw BadInput(file, "smoke", "entries of smoke \"" + name.substr(0, name.size() - 6) +
                                          "\" only (the file's name); one is of \"" + e.smoke + "\"");
    out[name] = read_file(file);
  }
  return out;
}

// The union of a ledger here (`ours`, "" when there is none) and the
// branch's file `name` (`theirs`): merge_ledgers, and an empty file on the
// branch is exit 2, as read_ledger refuses one here.
std::string merge_with_branch(const std::string& name, const std::string& ours, const std::string& theirs,
                              const std::string& theirs_is) {
  if (theirs.empty())
    throw BadInput(name + " (" + theirs_is + ")", "",
                   "at least one night (lockstep never writes an empty ledger: was it truncated?)");
  return merge_ledgers(name, ours, theirs, theirs_is);
}

}  // namespace

int history_push_command(const HistorySyncOptions& o) {
  std::map<std::string, std::string> mine = ledgers_in(o.dir);
  if (mine.empty()) throw BadInput(o.dir, "", "a history folder holding ledgers (<smoke>.jsonl) to push");
  // Ledgers merged (each side held to the reader's rules); any other file
  // on the branch is left there as it is, and not brought into the folder.
  auto merge = [](const std::string& name, const std::string& ours, const std::string& theirs,
                  const std::string& theirs_is) {
    return is_ledger_file_name(name) ? merge_with_branch(name, ours, theirs, theirs_is) : ours.empty() ? theirs : ours;
  };
  PushOutcome p = commit_and_push(mine, store_options(o, "lockstep history: " + std::to_string(mine.size()) + " ledger(s)"),
                                  merge);
  // The folder now holds what was pushed: the remote's entries too.
  size_t ledgers = 0;
  for (const auto& [name, text] : p.files) {
    if (!is_ledger_file_name(name)) continue;
    ++ledgers;
    if (mine.count(name) == 0 || mine[name] != text) write_file_atomically((fs::path(o.dir) / name).string(), text);
  }
  std::cout << "history: pushed " << ledgers << " ledger(s) to " << o.branch << " at " << o.remote << " (commit "
            << p.commit.substr(0, 12) << (p.merged ? ", merged with the remote's entries" : "")
            << (p.unchanged ? ", nothing new: no commit made" : "") << ")\n";
  return 0;
}

int history_pull_command(const HistorySyncOptions& o) {
  std::optional<std::map<std::string, std::string>> there = fetch_branch_files(store_options(o, "lockstep history pull"));
  std::map<std::string, std::string> mine = ledgers_in(o.dir);
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) throw io_error(o.dir, "create the history folder", ec.value());
  // Every ledger merged before any is written: one the reader refuses
  // leaves the folder as it was.
  size_t ledgers = 0, written = 0;
  std::map<std::string, std::string> changed;
  for (const auto& [name, text] : there ? *there : std::map<std::string, std::string>{}) {
    if (!is_ledger_file_name(name)) continue;
    ++ledgers;
    auto m = mine.find(name);
    std::string merged = merge_with_branch(name, m == mine.end() ? "" : m->second, text, o.branch + " at " + o.remote);
    if (m == mine.end() || merged != m->second) changed[name] = std::move(merged);
  }
  for (const auto& [name, merged] : changed) {
    write_file_atomically((fs::path(o.dir) / name).string(), merged);
    ++written;
  }
  std::cout << "history: pulled " << ledgers << " ledger(s) from " << o.branch << " at " << o.remote
            << (!there ? " (the branch does not exist there yet: `lockstep history push` makes it)"
                       : ledgers == 0 ? " (the branch holds no <smoke>.jsonl ledger)" : "")
            << "; " << written << " updated in " << o.dir << "\n";
  return 0;
}

}  // namespace lockstep

#include "distributed/rank_checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/hash.h"
#include "core/atomic_file.h"
#include "core/directory_lock.h"
#include "core/error.h"
#include "core/file_hash_cache.h"
#include "core/json_io.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "lockstep multi-rank checkpoint";
// In every folder this code makes: the first proof that removing it is safe.
constexpr const char* kMarker = ".lockstep-rank-checkpoint";

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// A name this code (or write_file_atomically's temporary) puts in the folder.
bool our_name(const std::string& name) {
  auto rank_file = [](const std::string& n) {
    size_t digits = n.size() > 10 ? n.size() - 10 : 0;  // "rank-" N ".ckpt"
    return n.rfind("rank-", 0) == 0 && n.size() > 10 && n.compare(n.size() - 5, 5, ".ckpt") == 0 &&
           n.find_first_not_of("0123456789", 5) == 5 + digits;
  };
  if (name == kMarker || name == kRankCheckpointManifest || rank_file(name)) return true;
  // write_file_atomically's temporary: .<name>.tmp.<pid>.<6 characters>
  size_t tmp = name.find(".tmp.");
  if (name[0] != '.' || tmp == std::string::npos) return false;
  std::string base = name.substr(1, tmp - 1), rest = name.substr(tmp + 5);
  size_t dot = rest.find('.');
  return (base == kRankCheckpointManifest || rank_file(base)) && dot != std::string::npos && dot > 0 &&
         rest.find_first_not_of("0123456789") == dot && rest.size() == dot + 7;
}

// A folder lockstep made for a checkpoint and nobody added to: a real
// folder (not a link) with the marker and nothing but the marker, the
// manifest and rank files. Only such a folder is ever removed or replaced;
// a copy a user keeps notes in is not.
bool only_ours(const std::string& dir) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(dir, ec)) || !fs::is_directory(dir, ec) ||
      !fs::exists(fs::path(dir) / kMarker, ec))
    return false;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (!our_name(e.path().filename().string()) || e.is_symlink(ec) || !e.is_regular_file(ec)) return false;
  return !ec;
}

[[noreturn]] void refuse(const std::string& dir, const std::string& role) {
  throw BadUsage(dir + ": exists and is not " + role +
                 " lockstep made and left untouched; refusing to replace or remove it (move it away, or choose "
                 "another --checkpoint)");
}

void remove_ours(const std::string& dir, const std::string& role) {
  if (!exists(dir)) return;
  if (!only_ours(dir)) refuse(dir, role);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) throw io_error(dir, "remove " + role, ec.value());
}

void rename_or_throw(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw io_error(from, "rename to " + to, ec.value());
}

std::string rank_name(int rank) { return "rank-" + std::to_string(rank) + ".ckpt"; }

// "ck/" and "ck/." are "ck": the folder, never something inside it.
std::string folder_path(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  std::string s = p.string();
  if (s.empty() || s == "." || s == ".." || s == "/" || p.filename() == "..")
    throw BadUsage("--checkpoint '" + dir + "': a folder name for the multi-rank checkpoint (not '.', '..' or '/')");
  return s;
}

}  // namespace

RankCheckpointWriter::RankCheckpointWriter(std::string dir, RankCheckpointInfo info)
    : dir_(folder_path(dir)), partial_(dir_ + ".partial"), info_(std::move(info)) {
  // One writer per checkpoint at a time: a second would clear this one's
  // partial folder under its ranks.
  lock_ = std::make_unique<DirectoryLock>(dir_ + ".lock", /*wait=*/true, [&](int pid) {
    throw EnvironmentError(dir_ + ": another `lockstep run --stop-after` is writing this checkpoint" +
                           (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
                           "; give one of them another --checkpoint");
  });
  if (exists(dir_) && !only_ours(dir_)) refuse(dir_, "a multi-rank checkpoint folder");
  remove_ours(partial_, "a partial checkpoint folder");
  std::error_code ec;
  fs::create_directories(partial_, ec);
  if (ec) throw io_error(partial_, "create the checkpoint folder", ec.value());
  std::ofstream(fs::path(partial_) / kMarker) << "a lockstep multi-rank checkpoint; replaced by the next one\n";
}

RankCheckpointWriter::~RankCheckpointWriter() = default;

std::string RankCheckpointWriter::rank_file(int rank) const { return partial_ + "/" + rank_name(rank); }

void RankCheckpointWriter::commit() {
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < info_.world_size; ++r) {
    std::error_code ec;
    if (!fs::is_regular_file(rank_file(r), ec))
      throw EnvironmentError(rank_file(r) + ": rank " + std::to_string(r) +
                             " finished without writing its checkpoint (a lockstep bug: please report it)");
    ranks.push_back({{"file", rank_name(r)}, {"xxh3_128", file_xxh3(rank_file(r))}});
  }
  nlohmann::json manifest = {{"format", kFormat},        {"schema", 1},         {"smoke", info_.smoke},
                             {"world_size", info_.world_size}, {"step", info_.step}, {"ranks", ranks}};
  write_file_atomically(partial_ + "/" + kRankCheckpointManifest, pretty_dump(manifest));
  // The swap: the old folder aside (under a name only this process uses),
  // the new one in, the old one gone. A kill between the renames leaves
  // DIR.replaced-<pid> (the previous checkpoint) and no DIR: resuming then
  // says there is no checkpoint, never reads a mix.
  if (exists(dir_) && !only_ours(dir_)) refuse(dir_, "a multi-rank checkpoint folder");
  std::string aside = dir_ + ".replaced-" + std::to_string(::getpid());
  if (exists(aside)) refuse(aside, "a folder");
  if (exists(dir_)) rename_or_throw(dir_, aside);
  rename_or_throw(partial_, dir_);
  std::error_code ec;
  fs::remove_all(aside, ec);
  if (ec) throw io_error(aside, "remove the replaced checkpoint", ec.value());
}

std::vector<std::string> open_rank_checkpoint(const std::string& dir, const std::string& smoke, int world_size) {
  std::error_code ec;
  if (!exists(dir)) {
    // A run killed between the two renames of commit() left the previous one aside.
    std::string aside;
    fs::path p = fs::path(dir).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
    fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
    for (const auto& e : fs::directory_iterator(parent, ec))
      if (e.path().filename().string().rfind(p.filename().string() + ".replaced-", 0) == 0) aside = e.path().string();
    throw BadUsage("--resume " + dir + ": no such checkpoint (a multi-rank smoke's is the folder `lockstep run "
                   "--stop-after N --checkpoint DIR` wrote)" +
                   (aside.empty() ? std::string()
                                  : "; " + aside + " holds the checkpoint a killed run had set aside: move it back to " +
                                        p.string() + " to resume from it"));
  }
  if (!fs::is_directory(dir, ec)) {
    fs::path parent = fs::path(dir).parent_path();
    if (exists((parent / kRankCheckpointManifest).string()))
      throw BadUsage("--resume " + dir + ": one rank's file of the multi-rank checkpoint " + parent.string() +
                     "; pass the folder (--resume " + parent.string() + ")");
    throw BadInput(dir, "", "a multi-rank checkpoint folder (one file per rank and " +
                                std::string(kRankCheckpointManifest) +
                                ", written by `lockstep run --stop-after` on a multi-rank smoke), got a file "
                                "(a single-process smoke's checkpoint?)");
  }
  std::string path = dir + "/" + kRankCheckpointManifest;
  if (!exists(path))
    throw BadInput(path, "", "the manifest of a multi-rank checkpoint (missing: the folder was not written by "
                             "`lockstep run --stop-after`, or its run was interrupted)");
  nlohmann::json doc = parse_json_text(read_file(path), path);
  JsonView m(doc, path);
  m.expect_object();
  m.allow_keys({"format", "schema", "smoke", "world_size", "step", "ranks"});
  if (m.at("format").as_string() != kFormat) m.at("format").fail(std::string("\"") + kFormat + "\"");
  m.at("schema").as_int(1, 1);
  if (std::string s = m.at("smoke").as_string(); s != smoke)
    m.at("smoke").fail("\"" + smoke + "\" (the smoke being resumed), got \"" + input_excerpt(s) + "\"");
  if (int64_t w = m.at("world_size").as_int(1, 64); w != world_size)
    m.at("world_size").fail(std::to_string(world_size) + " (this run's ranks, distributed.world_size or --world-size: "
                            "a run resumes on as many ranks as it stopped on), got " + std::to_string(w));
  m.at("step").as_int(1);
  JsonView ranks = m.at("ranks");
  ranks.expect_array();
  if (ranks.size() != static_cast<size_t>(world_size))
    ranks.fail("one entry per rank (" + std::to_string(world_size) + "), got " + std::to_string(ranks.size()));
  std::vector<std::string> files;
  for (int r = 0; r < world_size; ++r) {
    JsonView e = ranks.at(static_cast<size_t>(r));
    e.allow_keys({"file", "xxh3_128"});
    if (e.at("file").as_string() != rank_name(r)) e.at("file").fail("\"" + rank_name(r) + "\"");
    std::string want = e.at("xxh3_128").as_string();
    if (!is_hex_digest(want, 32))
      e.at("xxh3_128").fail("32 lowercase hex digits, got \"" + input_excerpt(want) + "\"");
    std::string file = dir + "/" + rank_name(r);
    if (!fs::is_regular_file(file, ec))
      throw BadInput(file, "", "rank " + std::to_string(r) + "'s checkpoint, as " + path + " lists it (missing)");
    if (std::string got = file_xxh3(file); got != want)
      throw BadInput(file, "", "XXH3-128 " + want + " as " + path + " records, got " + got +
                                   " (the file changed after the checkpoint was written)");
    files.push_back(file);
  }
  return files;
}

}  // namespace lockstep

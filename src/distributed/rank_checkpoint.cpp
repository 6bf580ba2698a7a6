#include "distributed/rank_checkpoint.h"

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_hash_cache.h"
#include "core/json_io.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "lockstep multi-rank checkpoint";
// In every folder this code makes: the proof that removing it is safe.
constexpr const char* kMarker = ".lockstep-rank-checkpoint";

bool made_by_lockstep(const std::string& dir) {
  std::error_code ec;
  return !fs::is_symlink(fs::symlink_status(dir, ec)) && fs::is_directory(dir, ec) &&
         fs::exists(fs::path(dir) / kMarker, ec);
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

// Removes `dir` when it is a checkpoint folder lockstep made; refuses
// anything else at that path.
void remove_ours(const std::string& dir, const std::string& role) {
  if (!exists(dir)) return;
  if (!made_by_lockstep(dir))
    throw BadUsage(dir + ": exists and is not a multi-rank checkpoint folder lockstep made (" + role +
                   "); refusing to remove it (move it away, or choose another --checkpoint)");
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

}  // namespace

RankCheckpointWriter::RankCheckpointWriter(std::string dir, RankCheckpointInfo info)
    : dir_(std::move(dir)), partial_(dir_ + ".partial"), info_(std::move(info)) {
  if (exists(dir_) && !made_by_lockstep(dir_))
    throw BadUsage(dir_ + ": exists and is not a multi-rank checkpoint folder lockstep made; refusing to replace it "
                   "(a multi-rank smoke's checkpoint is a folder of one file per rank; choose another --checkpoint)");
  remove_ours(partial_, "an interrupted run's partial checkpoint");
  std::error_code ec;
  fs::create_directories(partial_, ec);
  if (ec) throw io_error(partial_, "create the checkpoint folder", ec.value());
  std::ofstream(fs::path(partial_) / kMarker) << "a lockstep multi-rank checkpoint; replaced by the next one\n";
}

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
  // The swap: the old folder aside, the new one in, the old one gone. A
  // kill between the renames leaves DIR.old (the previous checkpoint) and
  // no DIR: resuming then says there is no checkpoint, never reads a mix.
  std::string old = dir_ + ".old";
  remove_ours(old, "an earlier checkpoint set aside");
  if (exists(dir_)) rename_or_throw(dir_, old);
  rename_or_throw(partial_, dir_);
  remove_ours(old, "the replaced checkpoint");
}

std::vector<std::string> open_rank_checkpoint(const std::string& dir, const std::string& smoke, int world_size) {
  std::error_code ec;
  if (!exists(dir))
    throw BadUsage("--resume " + dir + ": no such checkpoint (a multi-rank smoke's is the folder `lockstep run "
                   "--stop-after N --checkpoint DIR` wrote)");
  if (!fs::is_directory(dir, ec))
    throw BadInput(dir, "", "a multi-rank checkpoint folder (one file per rank and " +
                                std::string(kRankCheckpointManifest) +
                                ", written by `lockstep run --stop-after` on a multi-rank smoke), got a file "
                                "(a single-process smoke's checkpoint?)");
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
    m.at("smoke").fail("\"" + smoke + "\" (the smoke being resumed), got \"" + s + "\"");
  if (int64_t w = m.at("world_size").as_int(1, 64); w != world_size)
    m.at("world_size").fail(std::to_string(world_size) + " (the smoke's distributed.world_size: a run resumes on as "
                            "many ranks as it stopped on), got " + std::to_string(w));
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

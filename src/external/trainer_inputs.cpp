#include "external/trainer_inputs.h"

#include <glob.h>
#include <cerrno>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/file_hash_cache.h"
#include "core/hash.h"
#include "external/trainer_run.h"
#include "smoke/smoke_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

std::string field_of(size_t i) { return "trainer.inputs[" + std::to_string(i) + "]"; }

// Adds `path` (a glob match) to `out`: a regular file, or a folder's
// regular files recursively; anything else is exit 2, a link to a folder
// inside a folder too (name its target instead: no loops to follow).
// Returns how many files it found (a file already in `out` included).
size_t add_match(const SmokeConfig& c, size_t i, const fs::path& path, const fs::path& cwd,
               const std::vector<std::pair<std::string, std::string>>& places, std::map<std::string, std::string>& out) {
  auto under = [](const fs::path& file, const fs::path& dir) {
    std::string rel = file.lexically_relative(dir).string();
    return rel.empty() || rel.rfind("..", 0) == 0 ? std::string() : rel;
  };
  auto add_file = [&](const fs::path& file) {
    // The data cache first (where it lies differs most between machines),
    // then trainer.cwd, then the config's folder, else the absolute path.
    std::string rel;
    if (std::string in = under(file, places[0].second); !in.empty()) rel = places[0].first + "/" + in;
    if (rel.empty()) rel = under(file, cwd);
    if (std::string in = under(file, places[1].second); rel.empty() && !in.empty()) rel = places[1].first + "/" + in;
    if (rel.empty()) rel = file.string();
    // Two files may not take one name (a folder named "{data}" in
    // trainer.cwd): one of them would go unhashed.
    auto [at, added] = out.emplace(rel, file.string());
    if (!added && at->second != file.string())
      throw BadInput(c.file, field_of(i),
                     "input files with names of their own, got two named \"" + printable_message(rel, false) +
                         "\": " + printable_message(at->second, false) + " and " +
                         printable_message(file.string(), false) + " (rename the folder in trainer.cwd)");
    if (out.size() > kMaxTrainerInputFiles)
      throw BadInput(c.file, field_of(i),
                     "at most " + std::to_string(kMaxTrainerInputFiles) + " files across trainer.inputs (a fingerprint "
                     "field each), got more: narrow the patterns, or name an archive of the files");
  };
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  const bool loop = ec.value() == ELOOP;
  if (fs::is_regular_file(st)) {
    add_file(path);
    return 1;
  }
  if (!fs::is_directory(st))
    throw BadInput(c.file, field_of(i),
                   "regular files or folders, got " + path.string() +
                       (loop ? ": a loop of links (each names another, none a file)"
                        : fs::is_symlink(fs::symlink_status(path, ec)) && !fs::exists(st)
                            ? ": a dangling link (an unfetched Git LFS or git-annex file?)"
                            : ": not a regular file (a FIFO, socket or device)"));
  size_t found = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_symlink(ec) && it->is_directory(ec))
      throw BadInput(c.file, field_of(i), "regular files under " + path.string() + ", got " + it->path().string() +
                                              ", a link to a folder (name its target in trainer.inputs instead)");
    if (it->is_directory(ec)) continue;
    if (!it->is_regular_file(ec))
      throw BadInput(c.file, field_of(i), "regular files under " + path.string() + ", got " + it->path().string() +
                                              " (a dangling link, FIFO, socket or device)");
    add_file(it->path());
    ++found;
  }
  if (ec) throw BadInput(c.file, field_of(i), "a readable folder, " + path.string() + ": " + ec.message());
  return found;
}

// A glob match as the kernel opens it: a ".." after a link climbs out of
// the link's target, not out of the folder holding the link, so the
// folders are resolved (fs::canonical) rather than normalised by their
// names, and the last name is kept (a data file that is itself a link is
// named as the trainer opens it). A path that cannot be resolved is
// normalised by name; add_match says what is wrong with it.
fs::path as_opened(const fs::path& match) {
  std::error_code ec;
  fs::path name = match.filename();
  if (name.empty() || name == "." || name == "..") {
    fs::path whole = fs::canonical(match, ec);
    return ec ? match.lexically_normal() : whole;
  }
  fs::path dir = fs::canonical(match.parent_path().empty() ? fs::path(".") : match.parent_path(), ec);
  return ec ? match.lexically_normal() : dir / name;
}

// Why a pattern that matched nothing could not: its literal part (the
// folders before the first wildcard, or the whole path) runs through a
// loop of links or a folder that cannot be read; "" when neither.
std::string why_no_match(const fs::path& full) {
  fs::path literal;
  for (const fs::path& part : full) {
    if (part.string().find_first_of("*?[") != std::string::npos) break;
    literal /= part;
  }
  struct stat st {};
  if (::stat(literal.c_str(), &st) == 0) return "";
  if (errno == ELOOP) return " (" + literal.string() + " runs through a loop of symbolic links)";
  if (errno == EACCES) return " (" + literal.string() + ": a folder on the way cannot be read: permission denied)";
  return "";
}

// `path` made absolute with its links resolved where they exist.
std::string resolved_folder(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return (ec ? fs::absolute(path).lexically_normal() : p).string();
}

}  // namespace

std::string trainer_path(const std::string& arg, const std::string& cwd, const std::string& data_dir,
                         const std::string& config_dir) {
  const fs::path expanded = expand_placeholders(arg, {{"data", data_dir}, {"config_dir", config_dir}});
  return (expanded.is_absolute() ? expanded : fs::path(cwd) / expanded).string();
}

std::vector<std::pair<std::string, std::string>> trainer_input_files(const SmokeConfig& c) {
  const fs::path cwd(resolved_folder(c.trainer.resolved_cwd));
  // The placeholders, as the command has them; a file under one is named
  // through it ("{data}/digits.csv.gz"), so the name is the same on every
  // machine whatever its data cache's folder.
  const std::vector<std::pair<std::string, std::string>> places = {
      {"{data}", resolved_folder(data_dir())}, {"{config_dir}", resolved_folder(fs::absolute(c.file).parent_path())}};
  std::map<std::string, std::string> files;
  for (size_t i = 0; i < c.trainer.inputs.size(); ++i) {
    // As the command's arguments are expanded (a value holding "{data}"
    // itself is not expanded again).
    const fs::path full = trainer_path(c.trainer.inputs[i], cwd.string(), places[0].second, places[1].second);
    glob_t g{};
    int rc = ::glob(full.string().c_str(), 0, nullptr, &g);
    std::vector<std::string> matches;
    if (rc == 0)
      for (size_t k = 0; k < g.gl_pathc; ++k) matches.emplace_back(g.gl_pathv[k]);
    ::globfree(&g);
    if (rc == GLOB_NOMATCH) {
      const std::string& given = c.trainer.inputs[i];
      const std::string why = why_no_match(full);
      if (!fs::path(given).is_absolute() && full == cwd / given)  // no placeholder in it
        throw BadInput(c.file, field_of(i), "a pattern that matches at least one file in " + cwd.string() +
                                                " (trainer.cwd), got \"" + input_excerpt(given) + "\", which matches none" +
                                                why);
      // With {data} or {config_dir} in it, or absolute: where it looked, said whole.
      throw BadInput(c.file, field_of(i),
                     "a pattern that matches at least one file, got \"" + input_excerpt(given) + "\", that is " +
                         full.string() + ", which matches none" + why +
                         (given.find("{data}") != std::string::npos
                              ? " ({data} is the data cache, $LOCKSTEP_DATA_DIR or ~/.cache/lockstep/data: is the "
                                "dataset there?)"
                              : ""));
    }
    if (rc != 0)
      throw BadInput(c.file, field_of(i), "a pattern glob(3) can read, got \"" + input_excerpt(c.trainer.inputs[i]) +
                                              "\" (out of memory)");
    size_t found = 0;
    for (const auto& m : matches) found += add_match(c, i, as_opened(m), cwd, places, files);
    if (found == 0)
      throw BadInput(c.file, field_of(i), "a pattern that names at least one file, got \"" +
                                              input_excerpt(c.trainer.inputs[i]) + "\", which names only empty "
                                              "folders (a dataset not fetched yet?)");
  }
  return {files.begin(), files.end()};
}

void add_trainer_inputs(const SmokeConfig& c, Fingerprint& fp) {
  if (c.trainer.inputs.empty()) return;
  Xxh3Stream all;
  for (const auto& [rel, abs] : trainer_input_files(c)) {
    std::string h;
    try {
      h = cached_file_xxh3(abs);
    } catch (const Error& e) {
      throw BadInput(c.file, "trainer.inputs", "files lockstep can read to hash, got " + std::string(e.what()));
    }
    fp["trainer.input." + rel] = {h, false};
    all.update(rel.data(), rel.size() + 1);  // with its NUL: "a" + "bc" is not "ab" + "c"
    all.update(h.data(), h.size());
  }
  fp["trainer.inputs_xxh3"] = {all.hex(), false, true};
}

}  // namespace lockstep

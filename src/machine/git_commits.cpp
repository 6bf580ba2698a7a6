#include "machine/git_commits.h"

#include <git2.h>

#include <ctime>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "machine/libgit2_session.h"

namespace lockstep {

namespace {

std::string hex(const git_oid* id) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, id);
  return buf;
}

using Commit = std::unique_ptr<git_commit, decltype(&git_commit_free)>;

Commit lookup(git_repository* repo, const std::string& hash) {
  git_oid id;
  git_commit* c = nullptr;
  if (git_oid_fromstr(&id, hash.c_str()) != 0 || git_commit_lookup(&c, repo, &id) != 0)
    throw BadUsage(hash + ": no such commit (" + libgit2_error() + ")");
  return Commit(c, git_commit_free);
}

CommitInfo info_of(const git_commit* c) {
  CommitInfo i;
  i.hash = hex(git_commit_id(c));
  const char* summary = git_commit_summary(const_cast<git_commit*>(c));
  i.subject = summary ? summary : "";
  const git_signature* a = git_commit_author(c);
  if (a) {
    i.author = std::string(a->name ? a->name : "") + " <" + (a->email ? a->email : "") + ">";
    std::time_t t = static_cast<std::time_t>(a->when.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    i.date = buf;
  }
  return i;
}

}  // namespace

std::string CommitInfo::describe() const {
  return hash.substr(0, 7) + " " + subject + " (" + author + ", " + date + ")";
}

GitHistory::GitHistory(const std::string& path) {
  static Libgit2Session lib;
  git_buf root = {nullptr, 0, 0};
  if (git_repository_discover(&root, path.c_str(), 0, nullptr) != 0)
    throw BadUsage(path + ": not in a git repository (bisect reads its history)");
  int rc = git_repository_open(&repo_, root.ptr);
  git_buf_dispose(&root);
  if (rc != 0) throw BadUsage(path + ": the git repository cannot be read: " + libgit2_error());
  if (git_repository_is_bare(repo_)) {
    git_repository_free(repo_);
    repo_ = nullptr;
    throw BadUsage(path + ": a bare repository (bisect needs one with a work tree's history)");
  }
}

GitHistory::~GitHistory() {
  if (repo_) git_repository_free(repo_);
}

std::string GitHistory::root() const {
  const char* w = git_repository_workdir(repo_);
  return w ? w : "";
}

CommitInfo GitHistory::resolve(const std::string& rev) const {
  git_object* obj = nullptr;
  if (rev.empty() || git_revparse_single(&obj, repo_, rev.c_str()) != 0)
    throw BadUsage("'" + rev + "': names no commit of " + root() + " (" + libgit2_error() + ")");
  git_object* peeled = nullptr;
  int rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
  git_object_free(obj);
  if (rc != 0) throw BadUsage("'" + rev + "': names no commit (" + libgit2_error() + ")");
  CommitInfo i = info_of(reinterpret_cast<git_commit*>(peeled));
  git_object_free(peeled);
  return i;
}

std::vector<CommitInfo> GitHistory::first_parent_range(const std::string& good, const std::string& bad) const {
  if (good == bad) throw BadUsage("--good and --bad name the same commit " + good.substr(0, 7));
  std::vector<CommitInfo> line;
  Commit c = lookup(repo_, bad);
  while (true) {
    std::string h = hex(git_commit_id(c.get()));
    if (h == good) break;
    line.push_back(info_of(c.get()));
    if (git_commit_parentcount(c.get()) == 0)
      throw BadUsage("--good " + good.substr(0, 7) + " is not an ancestor of --bad " + bad.substr(0, 7) +
                     " on its first-parent line");
    git_commit* parent = nullptr;
    if (git_commit_parent(&parent, c.get(), 0) != 0)
      throw EnvironmentError("the parent of " + h.substr(0, 7) + " cannot be read: " + libgit2_error());
    c = Commit(parent, git_commit_free);
  }
  return {line.rbegin(), line.rend()};
}

void GitHistory::export_tree(const std::string& hash, const std::string& dir) const {
  Commit c = lookup(repo_, hash);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw EnvironmentError(dir + ": cannot create the folder for commit " + hash.substr(0, 7) + ": " + ec.message());
  git_checkout_options opts;
  git_checkout_options_init(&opts, GIT_CHECKOUT_OPTIONS_VERSION);
  // Into `dir` only: no index update, HEAD untouched, the work tree untouched.
  opts.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DONT_UPDATE_INDEX;
  opts.target_directory = dir.c_str();
  if (git_checkout_tree(repo_, reinterpret_cast<const git_object*>(c.get()), &opts) != 0)
    throw EnvironmentError(dir + ": commit " + hash.substr(0, 7) + " cannot be written there: " + libgit2_error());
}

}  // namespace lockstep

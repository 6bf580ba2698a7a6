// A repository's history as `lockstep bisect` needs it, through libgit2:
// two revisions resolved, the first-parent line between them, a commit's
// subject, author and date, and a commit's tree written into a folder of
// its own — never touching the work tree, the index, HEAD or git's own
// bisect state.
//
//   GitHistory h("/repo");                          // the repository holding /repo (exit 2 outside one)
//   CommitInfo good = h.resolve("v1.2"), bad = h.resolve("HEAD");
//   std::vector<CommitInfo> line = h.first_parent_range(good.hash, bad.hash);   // oldest first, bad last
//   h.export_tree(line[3].hash, "/tmp/lockstep-bisect-1/tree");                // the commit's files
#pragma once

#include <memory>
#include <string>
#include <vector>

struct git_repository;

namespace lockstep {

/// One commit, as a person reads it.
struct CommitInfo {
  std::string hash;     ///< 40 hex digits
  std::string subject;  ///< first line of the message
  std::string author;   ///< "Name <email>"
  std::string date;     ///< author date, UTC, "2026-12-03T10:00:00Z"
  /// "3f2a9c1 raise the learning rate (Ann <ann@x>, 2026-12-03T10:00:00Z)".
  std::string describe() const;
};

/// A repository opened for reading its history.
class GitHistory {
 public:
  /// Opens the repository holding `path`. Throws BadUsage (exit 2) outside
  /// one or when it cannot be read.
  explicit GitHistory(const std::string& path);
  ~GitHistory();
  GitHistory(const GitHistory&) = delete;
  GitHistory& operator=(const GitHistory&) = delete;

  /// The work tree's root folder.
  std::string root() const;
  /// The commit `rev` names (a hash, a branch, a tag, "HEAD~3"). Throws
  /// BadUsage (exit 2) naming it when it names none.
  CommitInfo resolve(const std::string& rev) const;
  /// The first-parent line from `good` (excluded) to `bad` (included),
  /// oldest first. Throws BadUsage when `good` is not an ancestor of `bad`
  /// on that line, or they are the same commit.
  std::vector<CommitInfo> first_parent_range(const std::string& good, const std::string& bad) const;
  /// Writes the files of commit `hash` into `dir` (created; must not exist
  /// or be empty). Throws EnvironmentError (exit 3) when it cannot.
  void export_tree(const std::string& hash, const std::string& dir) const;

 private:
  git_repository* repo_ = nullptr;
};

}  // namespace lockstep

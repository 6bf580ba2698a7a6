// Git state of the repository a smoke lives in, read with libgit2 (no `git`
// binary needed): commit, branch, dirty files, and the configured author.
//
//   GitState g = read_git_state("smoke/");   // discovers the enclosing repo
//   if (!g.in_repo) ...;  g.dirty_files;     // sorted paths
#pragma once

#include <string>
#include <vector>

namespace lockstep {

/// What libgit2 reports about the repository containing a path.
struct GitState {
  bool in_repo = false;
  std::string error;                     ///< why not, when !in_repo
  std::string workdir;                   ///< repository work tree root
  std::string git_dir;                   ///< the .git folder
  std::string commit;                    ///< HEAD oid, or "(no commits)"
  std::string branch;                    ///< short name, or "(detached)"
  std::string author;                    ///< "user.name <user.email>" from config
  std::vector<std::string> dirty_files;  ///< modified, staged or untracked (not ignored), sorted; never lockstep's .lockstep.lock
  /// Set when the repository belongs to another user (git would refuse it
  /// without safe.directory): it was read anyway, and this says by whom.
  std::string owner_note;
};

/// The fingerprint's git.dirty value: "clean", or the first 20 dirty paths
/// and "(+N more)".
std::string dirty_summary(const std::vector<std::string>& dirty_files);

/// Reads the git state of the repository that contains `path`. Never throws:
/// outside a repository `in_repo` is false and `error` says why. A
/// repository owned by another user (a CI container) is read as well, with
/// `owner_note` set: git.commit is not lost to safe.directory.
GitState read_git_state(const std::string& path);

}  // namespace lockstep

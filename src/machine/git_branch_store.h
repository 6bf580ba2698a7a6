// A flat folder of text files kept on a branch of the repository, written
// with libgit2 without touching the work tree or the index, and pushed:
// where `lockstep history push` keeps the nightly ledgers (docs/history.md).
//
//   BranchStoreOptions o;                          // branch lockstep-history, remote origin
//   PushOutcome p = commit_and_push({{"digits-cnn.jsonl", text}}, o, merge_ledgers);
//   auto there = fetch_branch_files(o);   // `history pull`: nullopt before the first push
//
// Two CI jobs pushing one after the other both land: a push the remote
// rejects (its branch moved) is followed by a fetch, a merge of each file
// with the caller's `merge` (the ledgers are append-only: their union), a
// merge commit and another push, up to `attempts` times.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace lockstep {

/// Where the files go.
struct BranchStoreOptions {
  std::string repo = ".";                  ///< a path inside the repository
  std::string branch = "lockstep-history"; ///< refs/heads/<branch>
  std::string remote = "origin";           ///< a remote's name, or a URL
  std::string message = "lockstep history";
  int attempts = 5;                        ///< pushes tried before giving up
};

/// Merges two versions of file `name` (ours: being pushed, "" when only the
/// branch has it; theirs: the local branch's or the remote's, which
/// `theirs_is` names for messages, e.g. "lockstep-history at origin") into
/// the one to push. Throws lockstep::Error to give up.
using FileMerge = std::function<std::string(const std::string& name, const std::string& ours, const std::string& theirs,
                                            const std::string& theirs_is)>;

/// What commit_and_push did.
struct PushOutcome {
  std::map<std::string, std::string> files;  ///< as pushed (merged with the remote's)
  std::string commit;                         ///< the pushed commit's id (40 hex digits)
  int attempts = 0;                           ///< pushes it took
  bool merged = false;                        ///< the remote had moved: its files were merged in
  bool unchanged = false;                     ///< nothing new: no commit made, the branch's tip pushed as it was
};

/// Commits `files` (name -> content; plain names, no folders), merged
/// with the files of the local branch's tip (its parent: what this clone
/// last pulled or pushed), as the whole tree of the branch, and pushes it
/// to the remote, merging with the remote's files when it moved (see
/// above). A file only the tip or the remote has goes through `merge` too,
/// with "" for ours. When the remote moved, a file `files` does not hold
/// is the remote's as it has it (changed or removed there), and a merge
/// that adds nothing to the remote's tree makes no commit (`unchanged`). Nothing the branch held is dropped by a push: a branch
/// holding anything but plain files (a folder, an executable, a link, a
/// submodule) is exit 2, as is a branch checked out in a work tree (the
/// main one or one of `git worktree add`); a
/// push that throws leaves the local branch where it was.
/// Throws exit-2 Error for a path outside a repository or a file name with
/// a '/', exit-3 Error when the remote cannot be reached or keeps moving.
PushOutcome commit_and_push(const std::map<std::string, std::string>& files, const BranchStoreOptions& options,
                            const FileMerge& merge);

/// The plain files of the remote's branch (fetched; a folder, executable,
/// link or submodule on it is exit 2, as for a push); nullopt when the
/// remote has no such branch yet. Also points the local branch at it when
/// the local one is absent. Same errors.
std::optional<std::map<std::string, std::string>> fetch_branch_files(const BranchStoreOptions& options);

}  // namespace lockstep

// libgit2 for machine/'s readers of git (git_state, git_commits): the
// library initialised once per process (reference-counted, so several
// callers coexist) and its last error as text.
//
//   static Libgit2Session session;   // before any git_* call
//   if (git_repository_open(&repo, path) != 0) throw BadUsage(path + ": " + libgit2_error());
#pragma once

#include <git2.h>

#include <string>

namespace lockstep {

/// git_libgit2_init() for the object's lifetime.
struct Libgit2Session {
  Libgit2Session() { git_libgit2_init(); }
  ~Libgit2Session() { git_libgit2_shutdown(); }
};

/// The message of libgit2's last error on this thread.
inline std::string libgit2_error() {
  const git_error* e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

}  // namespace lockstep

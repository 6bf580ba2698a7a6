#include "machine/git_state.h"

#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "machine/libgit2_session.h"

namespace lockstep {

namespace {

// The repository holding `path`, opened (null with st.error set when none
// opens). A checkout another user owns is read anyway, and said in
// st.owner_note.
git_repository* open_repository(const std::string& path, GitState& st) {
  git_buf root = {nullptr, 0, 0};
  if (git_repository_discover(&root, path.c_str(), 0, nullptr) != 0) {
    st.error = "not in a git repository (" + path + ")";
    return nullptr;
  }
  git_repository* raw = nullptr;
  int rc = git_repository_open(&raw, root.ptr);
  struct stat info {};
  bool foreign = ::stat(root.ptr, &info) == 0 && info.st_uid != ::geteuid();
  // libgit2 1.5 answers GIT_EOWNER, or fails looking up safe.directory.
  if (rc != 0 && (rc == GIT_EOWNER || foreign)) {
    // A CI job's user often does not own the checkout (a container image's
    // user on a runner's clone). git's safe.directory guards against running
    // an untrusted repository's hooks and config programs; lockstep runs
    // none, it only reads HEAD and the status. So the repository is read
    // anyway, and the record says so (git.owner), rather than losing
    // git.commit. Single-threaded here: the option is process-wide.
    std::string owner = foreign ? std::to_string(info.st_uid) : "?";
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
    rc = git_repository_open(&raw, root.ptr);
    git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 1);
    st.owner_note = "owned by uid " + owner + ", read by uid " + std::to_string(::geteuid()) +
                    " without git's safe.directory check (lockstep runs no hook or config program)";
  }
  git_buf_dispose(&root);
  if (rc != 0) {
    st.error = libgit2_error();
    return nullptr;
  }
  return raw;
}

// The changed and untracked files, sorted, lockstep's own lock files left
// out (core/directory_lock.h: held while bless records the git state).
std::vector<std::string> dirty_files(git_repository* repo) {
  std::vector<std::string> files;
  git_status_options opts = GIT_STATUS_OPTIONS_INIT;
  opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
  git_status_list* list = nullptr;
  if (git_status_list_new(&list, repo, &opts) == 0) {
    for (size_t i = 0; i < git_status_list_entrycount(list); ++i) {
      const git_status_entry* e = git_status_byindex(list, i);
      const git_diff_delta* d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
      if (d && d->new_file.path) {
        std::string path = d->new_file.path;
        if (path != ".lockstep.lock" && !(path.size() > 15 && path.compare(path.size() - 15, 15, "/.lockstep.lock") == 0))
          files.push_back(path);
      }
    }
    git_status_list_free(list);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

}  // namespace

GitState read_git_state(const std::string& path) {
  static Libgit2Session lib;
  GitState st;
  git_repository* raw = open_repository(path, st);
  if (!raw) return st;
  std::unique_ptr<git_repository, decltype(&git_repository_free)> repo(raw, git_repository_free);
  st.in_repo = true;
  if (const char* wd = git_repository_workdir(repo.get())) st.workdir = wd;
  if (const char* gd = git_repository_path(repo.get())) st.git_dir = gd;

  git_oid oid;
  if (git_reference_name_to_id(&oid, repo.get(), "HEAD") == 0) {
    char hex[GIT_OID_HEXSZ + 1];
    git_oid_tostr(hex, sizeof hex, &oid);
    st.commit = hex;
  } else {
    st.commit = "(no commits)";
  }
  git_reference* head = nullptr;
  if (git_repository_head(&head, repo.get()) == 0) {
    st.branch = git_repository_head_detached(repo.get()) ? "(detached)" : git_reference_shorthand(head);
    git_reference_free(head);
  } else {
    st.branch = "(unborn)";
  }
  git_config* cfg = nullptr;
  if (git_repository_config_snapshot(&cfg, repo.get()) == 0) {
    const char* name = nullptr;
    const char* email = nullptr;
    git_config_get_string(&name, cfg, "user.name");
    git_config_get_string(&email, cfg, "user.email");
    st.author = std::string(name ? name : "(no user.name)") + " <" + (email ? email : "") + ">";
    git_config_free(cfg);
  }
  st.dirty_files = dirty_files(repo.get());
  return st;
}

std::string dirty_summary(const std::vector<std::string>& dirty_files) {
  if (dirty_files.empty()) return "clean";
  std::string out;
  size_t shown = std::min<size_t>(dirty_files.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? " " : "") + dirty_files[i];
  if (dirty_files.size() > shown) out += " (+" + std::to_string(dirty_files.size() - shown) + " more)";
  return out;
}

}  // namespace lockstep

#include "machine/git_branch_store.h"

#include <cctype>
#include <memory>
#include <optional>
#include <vector>

#include "core/error.h"
#include "machine/libgit2_session.h"

namespace lockstep {

namespace {

// Owning handles for the libgit2 objects used here.
template <typename T, void (*Free)(T*)>
struct Git {
  T* p = nullptr;
  Git() = default;
  Git(const Git&) = delete;
  Git& operator=(const Git&) = delete;
  ~Git() {
    if (p) Free(p);
  }
  T** out() { return &p; }
  T* get() const { return p; }
};
using Repo = Git<git_repository, git_repository_free>;
using Ref = Git<git_reference, git_reference_free>;
using Commit = Git<git_commit, git_commit_free>;
using Tree = Git<git_tree, git_tree_free>;
using Remote = Git<git_remote, git_remote_free>;
using Builder = Git<git_treebuilder, git_treebuilder_free>;
using Blob = Git<git_blob, git_blob_free>;
using Sig = Git<git_signature, git_signature_free>;

// A name that stays inside the folder it is written to.
// (".gitattributes" is one; ".", ".." and ".git" are none).
bool plain_name(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !name.empty() && name != "." && name != ".." && lower != ".git" && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

[[noreturn]] void fail_env(const std::string& what) { throw EnvironmentError(what + ": " + libgit2_error()); }

std::string oid_hex(const git_oid& id) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &id);
  return buf;
}

class Store {
 public:
  explicit Store(const BranchStoreOptions& o) : o_(o) {
    if (git_repository_open_ext(repo_.out(), o.repo.c_str(), 0, nullptr) != 0)
      throw BadInput(o.repo, "", "a path inside a git repository (" + libgit2_error() + ")");
    int valid = 0;
    if (git_reference_name_is_valid(&valid, ("refs/heads/" + o.branch).c_str()) != 0 || !valid ||
        o.branch.find('*') != std::string::npos || o.branch.rfind("refs/", 0) == 0 || o.branch == "HEAD")
      throw BadInput(o.repo, "branch", "a branch name git accepts (no spaces, '..', '~', '*'), got \"" + o.branch + "\"");
    int rc = git_remote_lookup(remote_.out(), repo_.get(), o.remote.c_str());
    bool looks_like_url = o.remote.find(':') != std::string::npos || o.remote.find('/') != std::string::npos;
    if (rc != 0 && !looks_like_url)
      throw BadInput(o.repo, "remote", "a remote of this repository (git remote -v lists them) or a URL; it has no "
                                       "remote named \"" + o.remote + "\"");
    if (rc != 0 && git_remote_create_anonymous(remote_.out(), repo_.get(), o.remote.c_str()) != 0)
      throw BadInput(o.repo, "remote", "a remote's name or URL, got \"" + o.remote + "\" (" + libgit2_error() + ")");
    // A name keeps its remote-tracking ref; a URL fetches into lockstep's own.
    tracking_ = "refs/remotes/" + std::string(rc == 0 ? o.remote : "lockstep") + "/" + o.branch;
  }

  // Fetches the remote's branch into tracking_; false when it has none.
  bool fetch() {
    std::string spec = "+refs/heads/" + o_.branch + ":" + tracking_;
    char* specs[] = {spec.data()};
    git_strarray refspecs{specs, 1};
    git_fetch_options fo = GIT_FETCH_OPTIONS_INIT;
    if (git_remote_fetch(remote_.get(), &refspecs, &fo, nullptr) != 0)
      fail_env("fetching " + o_.branch + " from " + o_.remote);
    Ref r;
    return git_reference_lookup(r.out(), repo_.get(), tracking_.c_str()) == 0;
  }

  // The tip of `ref`, or nullopt-like false.
  bool tip(const std::string& ref, git_oid& id) {
    return git_reference_name_to_id(&id, repo_.get(), ref.c_str()) == 0;
  }

  // Whether the local branch is checked out in a work tree of the
  // repository, the main one or a linked one (`git worktree add`): a commit
  // to it would leave that work tree and index behind it.
  bool checked_out() {
    Ref branch;
    if (git_reference_lookup(branch.out(), repo_.get(), local().c_str()) != 0) return false;
    return git_branch_is_checked_out(branch.get()) == 1;
  }


  // The local branch back at `id`, or gone when it did not exist; on the
  // way out of a failed push, so nothing here throws.
  void reset_local(const std::optional<git_oid>& id) {
    Ref r;
    if (id) {
      point_local(*id, "lockstep history: push refused");
    } else if (git_reference_lookup(r.out(), repo_.get(), local().c_str()) == 0) {
      git_reference_delete(r.get());
    }
  }

  // Points the local branch at `id`; false when git refused.
  bool point_local(const git_oid& id, const char* why) {
    Ref r;
    return git_reference_create(r.out(), repo_.get(), local().c_str(), &id, 1, why) == 0;
  }

  // The plain files of `commit_id`'s tree. An entry that is not a plain
  // file is refused, by a push (which commits the tree anew and would lose
  // it) and by a pull alike: the branch is not a ledger branch.
  std::map<std::string, std::string> files_of(const git_oid& commit_id) {
    Commit c;
    Tree t;
    if (git_commit_lookup(c.out(), repo_.get(), &commit_id) != 0 || git_commit_tree(t.out(), c.get()) != 0)
      fail_env("reading " + o_.branch);
    std::map<std::string, std::string> out;
    for (size_t i = 0; i < git_tree_entrycount(t.get()); ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(t.get(), i);
      std::string name = git_tree_entry_name(e);
      // A branch of plain files only: a push commits the whole tree anew,
      // so a folder, an executable, a link or a submodule would be lost (a
      // code branch named by mistake: refused before anything is written).
      const git_filemode_t mode = git_tree_entry_filemode(e);
      if (mode != GIT_FILEMODE_BLOB)
        throw BadInput(o_.remote, o_.branch + ":" + name,
                       std::string("a branch of plain files only (ledgers, on a branch of their own such as "
                                   "lockstep-history), got ") +
                           (mode == GIT_FILEMODE_TREE              ? "a folder"
                            : mode == GIT_FILEMODE_BLOB_EXECUTABLE ? "an executable file"
                            : mode == GIT_FILEMODE_LINK            ? "a symbolic link"
                                                                   : "a submodule") +
                           ": is --branch a branch of code?");
      if (!plain_name(name))
        throw BadInput(o_.remote, o_.branch + ":" + name, "plain file names in the branch's folder (no '/' or '..')");
      Blob b;
      if (git_blob_lookup(b.out(), repo_.get(), git_tree_entry_id(e)) != 0) fail_env("reading " + o_.branch);
      out[git_tree_entry_name(e)] = std::string(static_cast<const char*>(git_blob_rawcontent(b.get())),
                                                static_cast<size_t>(git_blob_rawsize(b.get())));
    }
    return out;
  }

  // A commit of `files` with `parents`, made the local branch's tip; the
  // one parent itself when the tree is the parent's (nothing new).
  git_oid commit(const std::map<std::string, std::string>& files, const std::vector<git_oid>& parents) {
    Builder tb;
    if (git_treebuilder_new(tb.out(), repo_.get(), nullptr) != 0) fail_env("building the tree");
    for (const auto& [name, text] : files) {
      if (!plain_name(name)) throw BadInput(name, "", "a plain file name for the branch's folder");
      git_oid blob;
      if (git_blob_create_from_buffer(&blob, repo_.get(), text.data(), text.size()) != 0 ||
          git_treebuilder_insert(nullptr, tb.get(), name.c_str(), &blob, GIT_FILEMODE_BLOB) != 0)
        fail_env("writing " + name + " to the repository");
    }
    git_oid tree_id, id;
    Tree tree;
    if (git_treebuilder_write(&tree_id, tb.get()) != 0 || git_tree_lookup(tree.out(), repo_.get(), &tree_id) != 0)
      fail_env("writing the tree");
    std::vector<std::unique_ptr<Commit>> owned;
    std::vector<const git_commit*> ps;
    for (const git_oid& p : parents) {
      owned.push_back(std::make_unique<Commit>());
      if (git_commit_lookup(owned.back()->out(), repo_.get(), &p) != 0) fail_env("reading the branch's tip");
      ps.push_back(owned.back()->get());
    }
    // Nothing new on top of one parent: no empty commit, the tip stays.
    if (ps.size() == 1 && git_oid_equal(git_commit_tree_id(ps[0]), &tree_id)) return parents[0];
    Sig sig;
    if (git_signature_default(sig.out(), repo_.get()) != 0 &&
        git_signature_now(sig.out(), "lockstep", "lockstep@localhost") != 0)
      fail_env("making a signature");
    if (git_commit_create(&id, repo_.get(), nullptr, sig.get(), sig.get(), nullptr, o_.message.c_str(), tree.get(),
                          ps.size(), ps.data()) != 0)
      fail_env("committing to " + o_.branch);
    Ref r;
    if (git_reference_create(r.out(), repo_.get(), ("refs/heads/" + o_.branch).c_str(), &id, 1, o_.message.c_str()) != 0)
      fail_env("moving " + o_.branch);
    return id;
  }

  // Pushes the local branch; false when the remote rejected it (it moved).
  bool push() {
    std::string spec = "refs/heads/" + o_.branch + ":refs/heads/" + o_.branch;
    char* specs[] = {spec.data()};
    git_strarray refspecs{specs, 1};
    git_push_options po = GIT_PUSH_OPTIONS_INIT;
    std::string rejected;
    po.callbacks.push_update_reference = [](const char*, const char* status, void* payload) {
      if (status) *static_cast<std::string*>(payload) = status;
      return 0;
    };
    po.callbacks.payload = &rejected;
    int rc = git_remote_push(remote_.get(), &refspecs, &po);
    if (rc == GIT_ENONFASTFORWARD || (rc != 0 && libgit2_error().find("fastforward") != std::string::npos)) return false;
    if (rc != 0) fail_env("pushing " + o_.branch + " to " + o_.remote);
    return rejected.empty();
  }

  std::string tracking() const { return tracking_; }
  std::string local() const { return "refs/heads/" + o_.branch; }


 private:
  Libgit2Session session_;
  BranchStoreOptions o_;
  Repo repo_;
  Remote remote_;
  std::string tracking_;
};

}  // namespace

PushOutcome commit_and_push(const std::map<std::string, std::string>& files, const BranchStoreOptions& o,
                            const FileMerge& merge) {
  Store s(o);
  PushOutcome out;
  out.files = files;
  // First on top of the local branch (as the last pull left it); when the
  // remote rejects that, on top of the remote's, its files merged in.
  // Each file of `tree` merged into what is pushed; a file only it has
  // through `merge` too (with "" for ours), so that the caller holds it to
  // its rules.
  auto absorb = [&](const std::map<std::string, std::string>& tree, const std::string& from) {
    for (const auto& [name, text] : tree) {
      auto mine = out.files.find(name);
      if (mine == out.files.end()) out.files[name] = merge(name, "", text, from);
      else if (mine->second != text) out.files[name] = merge(name, mine->second, text, from);
    }
  };
  if (s.checked_out())
    throw BadInput(o.repo, "branch", "a branch of its own for the ledgers (such as lockstep-history), got " + o.branch +
                                         ", a branch checked out in a work tree of this repository: a push "
                                         "commits a tree of ledgers to it");
  std::vector<git_oid> parents;
  git_oid ours;
  std::optional<git_oid> before;
  if (s.tip(s.local(), ours)) {
    before = ours;
    parents.push_back(ours);
    // The union with the branch as this clone last saw it: a folder that
    // lacks what the branch holds (a cache miss, a cut file) must not push
    // its loss as a fast-forward.
    absorb(s.files_of(ours), "the local branch " + o.branch);
  }
  try {
    for (out.attempts = 1; out.attempts <= o.attempts; ++out.attempts) {
      git_oid id = s.commit(out.files, parents);
      out.commit = oid_hex(id);
      out.unchanged = parents.size() == 1 && git_oid_equal(&id, &parents[0]);  // commit() made none
      if (s.push()) return out;
      git_oid theirs;
      if (!s.fetch() || !s.tip(s.tracking(), theirs))
        throw EnvironmentError("pushing " + o.branch + " to " + o.remote + ": refused, and the remote has no such branch");
      // The caller's files, merged so far; every other file is the
      // remote's, as it has it now (changed or removed there since this
      // clone last saw it), never this clone's older copy.
      std::map<std::string, std::string> own;
      for (auto& [name, text] : out.files)
        if (files.count(name)) own[name] = std::move(text);
      out.files = std::move(own);
      const std::map<std::string, std::string> remote_files = s.files_of(theirs);
      absorb(remote_files, o.branch + " at " + o.remote);
      out.merged = true;
      if (out.files == remote_files) {
        // Nothing of ours the remote lacks: no merge commit, the local
        // branch at the remote's tip.
        if (!s.point_local(theirs, o.message.c_str())) fail_env("moving " + o.branch);
        out.commit = oid_hex(theirs);
        out.unchanged = true;
        return out;
      }
      parents = {theirs, id};
    }
  } catch (...) {
    s.reset_local(before);  // a push that did not land leaves the local branch where it was
    throw;
  }
  s.reset_local(before);
  throw EnvironmentError("pushing " + o.branch + " to " + o.remote + ": the remote's branch kept moving (" +
                         std::to_string(o.attempts) + " attempts); run history push again");
}

std::optional<std::map<std::string, std::string>> fetch_branch_files(const BranchStoreOptions& o) {
  Store s(o);
  git_oid theirs, ours;
  if (!s.fetch() || !s.tip(s.tracking(), theirs)) return std::nullopt;
  if (!s.tip(s.local(), ours)) {
    // The local branch starts at the remote's (no commit made here).
    Libgit2Session session;
    git_repository* repo = nullptr;
    if (git_repository_open_ext(&repo, o.repo.c_str(), 0, nullptr) == 0) {
      git_reference* r = nullptr;
      if (git_reference_create(&r, repo, s.local().c_str(), &theirs, 0, "lockstep history pull") == 0) git_reference_free(r);
      git_repository_free(repo);
    }
  }
  return s.files_of(theirs);
}

}  // namespace lockstep

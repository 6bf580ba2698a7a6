// `lockstep init [DIR]`: scaffolds lockstep in a team's repository — one
// example smoke that runs as is, goldens/, the .gitignore entries, the CI
// template and a .gitlab-ci.yml that includes it, and the pre-push hook
// when DIR is a git work tree — without overwriting anything, and says
// what it did. Running it twice changes nothing.
//
//   $ lockstep init
//   created smoke/example-mlp.json (a built-in smoke on synthetic data: runs as is)
//   (without lockstep-torch beside lockstep, the bundle or the wheel: an
//   empty smoke/ and where to read how to gate a trainer)
//   created goldens/ ...
#include <filesystem>
#include <iostream>
#include <vector>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/install_paths.h"
#include "machine/git_state.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// A built-in smoke on synthetic tabular data: no file to fetch, about two
// seconds per run on one core.
const char* kExampleSmoke = R"({
  "schema": 1,
  "name": "example-mlp",
  "device": "cpu",
  "seed": 20261201,
  "steps": 10,
  "resume_at": 5,
  "determinism": {"mode": "strict", "intra_op_threads": 1, "inter_op_threads": 1},
  "repeat": 2,
  "data": {
    "source": "synthetic",
    "synthetic": {"kind": "tabular", "rows": 256},
    "sample_shape": [16],
    "batch_size": 16,
    "workers": 2,
    "shuffle": true,
    "drop_last": true
  },
  "model": {"name": "mlp", "hidden": 32, "dropout": 0.1, "classes": 4},
  "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 0.01},
  "tolerance": {
    "series": {"default": {"atol": 1e-6, "rtol": 1e-4}},
    "probes": {"default": {"atol": 1e-9, "rtol": 1e-6}},
    "resources": {"step_time_ratio": 10}
  }
}
)";

// What lockstep writes that is not to be committed: its output folder, the
// goldens folder's lock file, and the temporaries of atomic writes.
// lockstep-out/ at any depth: the Python helper run by hand writes one
// beside the trainer.
// .gitlab-ci-local/: gitlab-ci-local's own folder after a local pipeline
// run (bless refuses a work tree holding untracked files).
// lockstep-history/: the ledger folder of a local `check --history`.
// __pycache__/: what Python leaves beside a trainer's modules (and the
// helper's, run from a checkout).
// .lockstep-venv/: the CI template's trainer jobs install the wheel there.
const char* kIgnored[] = {"lockstep-out/",     "lockstep-import/",   ".lockstep.lock", ".*.tmp.*",
                          ".gitlab-ci-local/", "lockstep-history/", "__pycache__/",   ".lockstep-venv/"};

// The .gitlab-ci.yml init writes for `kind` ("built-in", "trainer" or
// "both"): the template included, and the variables naming the image each
// job needs; with trainer smokes only, the built-in jobs are switched off.
std::string gitlab_ci_for(const std::string& kind) {
  std::string out =
      "# lockstep: blocks a merge request whose smoke training or batch checksums\n"
      "# move away from goldens/ (ci/templates/lockstep.gitlab-ci.yml says more).\n"
      "include:\n"
      "  - local: ci/templates/lockstep.gitlab-ci.yml\n\n"
      "variables:\n";
  if (kind != "trainer")
    out +=
        "  # Built-in smokes (no \"trainer\" section) run in an image with lockstep and\n"
        "  # lockstep-torch: lockstep:cpu (Dockerfile.cpu in lockstep's repository), or\n"
        "  # the Debian package (docs/install.md). It has no Python for your trainer.\n"
        "  LOCKSTEP_IMAGE: \"lockstep:cpu\"\n";
  if (kind != "built-in")
    out += std::string(
               "  # Trainer smokes (a \"trainer\" section) run in your trainer's own image\n"
               "  # (python3 with its torch): set it, or no trainer job runs. lockstep's wheel\n"
               "  # is pip-installed there into a venv over the image's packages: a URL, a\n"
               "  # path, or lockstep==VERSION from your package registry (PIP_INDEX_URL).\n"
               "  LOCKSTEP_TRAINER_IMAGE: \"\"\n"
               "  LOCKSTEP_WHEEL: \"lockstep==") +
           LOCKSTEP_VERSION + "\"\n";
  if (kind == "trainer")
    out +=
        "\n# This repository has trainer smokes only: the jobs in lockstep's own image are off.\n"
        "lockstep-check:\n  rules: [{when: never}]\n"
        "lockstep-nightly:\n  rules: [{when: never}]\n"
        "lockstep-bless:\n  rules: [{when: never}]\n"
        "lockstep-gpu:\n  rules: [{when: never}]\n";
  return out;
}

void say(const std::string& what) { std::cout << what << "\n"; }

// init writes only inside DIR: a symbolic link on the way (smoke/ -> /elsewhere)
// is refused before anything is written.
void refuse_links(const fs::path& root, const std::vector<fs::path>& paths) {
  std::error_code ec;
  for (const fs::path& p : paths)
    for (fs::path at = p; at != root && at.has_relative_path(); at = at.parent_path())
      if (fs::is_symlink(at, ec))
        throw BadUsage(at.string() + ": a symbolic link; init writes only inside " + root.string() +
                       " and never through a link");
}

// Writes `text` to `path` unless something is there; returns whether it wrote.
bool create_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) return false;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw io_error(path.parent_path().string(), "create the folder", ec.value());
  write_file_atomically(path.string(), text);
  return true;
}

std::string rel(const fs::path& p, const fs::path& root) { return p.lexically_relative(root).string(); }

}  // namespace

namespace {

// .gitignore: the entries of kIgnored it lacks, appended.
void update_gitignore(const fs::path& root) {
  std::error_code ec;
  fs::path ignore = root / ".gitignore";
  std::string text = fs::exists(ignore, ec) ? read_file(ignore.string()) : "";
  std::string added;
  for (const char* entry : kIgnored) {
    bool present = false;
    size_t at = 0;
    while (!present && at <= text.size()) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      present = text.compare(at, end - at, entry) == 0;
      at = end + 1;
    }
    if (!present) added += std::string(entry) + "\n";
  }
  if (!added.empty()) {
    if (!text.empty() && text.back() != '\n') text += "\n";
    write_file_atomically(ignore.string(), text + added);
    say(std::string(text.empty() ? "created" : "updated") + " .gitignore (lockstep-out/, lockstep-import/, lockstep-history/, __pycache__/, the lock file, "
        "temporaries, .gitlab-ci-local/, .lockstep-venv/)");
  } else {
    say("kept .gitignore (it has lockstep's entries)");
  }

}

// The CI template, and a .gitlab-ci.yml that includes it (kept when there).
void add_ci_files(const fs::path& root, const std::string& kind) {
  std::string tmpl = shipped_path("ci/lockstep.gitlab-ci.yml", "ci/templates/lockstep.gitlab-ci.yml");
  if (tmpl.empty())
    throw EnvironmentError("the CI template lockstep.gitlab-ci.yml is neither in share/lockstep/ci beside this "
                           "lockstep nor in its source tree (a broken install)");
  fs::path ci = root / "ci" / "templates" / "lockstep.gitlab-ci.yml";
  if (create_file(ci, read_file(tmpl)))
    say("created " + rel(ci, root) + " (the jobs: lockstep-check, lockstep-nightly, lockstep-gpu, lockstep-bless, "
        "lockstep-trainer, lockstep-trainer-bless)");
  else
    say("kept " + rel(ci, root));
  fs::path gitlab = root / ".gitlab-ci.yml";
  if (create_file(gitlab, gitlab_ci_for(kind))) {
    say("created .gitlab-ci.yml (includes the template; " +
        std::string(kind == "built-in" ? "built-in smokes: set LOCKSTEP_IMAGE, an image with lockstep-torch"
                    : kind == "trainer"
                        ? "trainer smokes: set LOCKSTEP_TRAINER_IMAGE, your trainer's image with python3 and torch, "
                          "and LOCKSTEP_WHEEL if lockstep's wheel is not in your package registry"
                        : "built-in smokes run in LOCKSTEP_IMAGE, an image with lockstep-torch; trainer smokes in "
                          "LOCKSTEP_TRAINER_IMAGE, your trainer's image with python3 and torch, once you set it") +
        ")");
  } else if (read_file(gitlab.string()).find("lockstep.gitlab-ci.yml") == std::string::npos) {
    say("kept .gitlab-ci.yml; add to it:\n  include:\n    - local: ci/templates/lockstep.gitlab-ci.yml");
  } else {
    say("kept .gitlab-ci.yml (it includes the template)");
  }
}
}  // namespace

int init_command(const InitOptions& o) {
  fs::path root = fs::absolute(o.dir).lexically_normal();
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec)) throw BadUsage(o.dir + ": not a folder");
  fs::create_directories(root, ec);
  if (ec) throw io_error(root.string(), "create the folder", ec.value());
  refuse_links(root, {root / "smoke" / "example-mlp.json", root / "goldens", root / ".gitignore",
                      root / "ci" / "templates" / "lockstep.gitlab-ci.yml", root / ".gitlab-ci.yml"});

  // What the repository gates: the built-in example needs lockstep-torch
  // beside lockstep (the bundle and the wheel have none).
  const bool torch_here = fs::exists(sibling_executable("lockstep-torch"), ec);
  const std::string kind = !o.kind.empty() ? o.kind : torch_here ? "both" : "trainer";

  // smoke/: one example, only when the folder has no smoke yet.
  fs::path smoke = root / "smoke";
  bool has_smoke = false;
  if (fs::is_directory(smoke, ec))
    for (const auto& e : fs::directory_iterator(smoke, ec)) has_smoke = has_smoke || e.path().extension() == ".json";
  if (has_smoke) {
    say("kept smoke/ (it has smoke configs)");
  } else if (kind == "trainer") {
    fs::create_directories(smoke, ec);
    if (ec) throw io_error(smoke.string(), "create the folder", ec.value());
    say(std::string("created smoke/, empty: ") +
        (torch_here ? "--kind trainer"
                    : "this lockstep has no lockstep-torch beside it (the bundle or the wheel), so it runs your own "
                      "trainer, not the built-in example") +
        "; write smoke/<name>.json with a trainer section (docs/trainers.md; examples/pytorch-trainer in "
        "lockstep's source is a complete one)");
  } else {
    create_file(smoke / "example-mlp.json", kExampleSmoke);
    say(std::string("created smoke/example-mlp.json (a built-in smoke on synthetic data: runs as is") +
        (torch_here ? "" : " where lockstep-torch is, not with this lockstep") +
        "; docs: smoke-config.md, trainers.md for your own trainer)");
  }

  fs::path goldens = root / "goldens";
  if (fs::is_directory(goldens, ec)) {
    say("kept goldens/");
  } else {
    fs::create_directories(goldens, ec);
    if (ec) throw io_error(goldens.string(), "create the folder", ec.value());
    say("created goldens/ (`lockstep bless smoke/ --reason \"first goldens\"` fills it; commit it)");
  }

  update_gitignore(root);
  add_ci_files(root, kind);
  // The pre-push hook, when DIR is a repository's work tree.
  GitState git = read_git_state(root.string());
  bool hooked = false;
  if (git.in_repo && fs::equivalent(fs::path(git.workdir), root, ec)) {
    try {
      hook_install_command(root.string());
      hooked = true;
    } catch (const Error& e) {
      say(std::string("pre-push hook not installed: ") + e.what());
    }
  } else {
    say("no pre-push hook: " + root.string() + " is not the root of a git work tree (after `git init`, "
        "`lockstep hook install` adds it)");
  }
  const bool smoke_empty = fs::is_empty(smoke, ec);
  // init run again in a gated repository: its goldens are there already.
  bool has_goldens = false;
  for (const auto& d : fs::directory_iterator(goldens, ec))
    for (const auto& e : fs::directory_iterator(d.path(), ec)) has_goldens = has_goldens || e.path().extension() == ".json";
  say(std::string("next: ") +
      (smoke_empty ? "write smoke/<name>.json for your trainer (docs/trainers.md), " : "") +
      (has_goldens ? "commit these files, then `lockstep check smoke/` (goldens/ has goldens; a smoke without one: "
                     "`lockstep bless smoke/<name>.json --reason ...`, then commit goldens/)"
                   : "commit these files (bless refuses a dirty work tree), then `lockstep bless smoke/ --reason "
                     "\"first goldens\"`, `lockstep check smoke/`, commit goldens/") +
      (hooked ? "" : "; `lockstep hook install` adds the pre-push check"));
  return 0;
}

}  // namespace lockstep

// `lockstep bisect-env`: which difference between two stacks moves the
// curve. Two environment files list what can be set to make a run on this
// machine look like each stack; their differences are searched with delta
// debugging (Zeller's ddmin) for the smallest set that, applied to the
// good stack, fails the smoke against the good stack's own run record.
//
//   {"env": {"ATEN_CPU_CAPABILITY": "avx2", "OMP_PROC_BIND": "close"},
//    "library_path": ["/opt/b/lib"],         prepended to LD_LIBRARY_PATH
//    "python_path": ["/opt/b/site-packages"], prepended to PYTHONPATH
//    "python": "/opt/b/bin/python3"}          a trainer smoke's interpreter
//
//   EnvBisectOptions o;  o.good_env = "good.json";  o.bad_env = "bad.json";  o.smokes = {"smoke/digits-cnn.json"};
//   EnvBisectResult r = bisect_env(o, launcher);
//   r.culprit;   // {ATEN_CPU_CAPABILITY=default}: the curve moves with it alone
//
// A key one file sets and the other does not is a difference too: applying
// it takes the bad file's value, or leaves the variable as inherited. Every
// tested set runs `repeats` times, held bit for bit; a set whose runs
// differ, or that cannot run, counts as not failing (ddmin's unresolved).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/job_slots.h"
#include "launch/launcher.h"
#include "record/fingerprint.h"

namespace lockstep {

/// One environment file.
struct StackEnv {
  std::string file;
  std::map<std::string, std::string> env;
  std::vector<std::string> library_path;
  std::vector<std::string> python_path;
  std::string python;
};

/// Reads an environment file. Throws exit-2 Error naming the file and
/// field: unknown keys, wrong types, an empty or '='-holding variable name,
/// LD_LIBRARY_PATH or PYTHONPATH set in "env" (use the lists), a folder
/// listed twice, a relative path.
StackEnv read_stack_env(const std::string& path);

/// Writes `s` as an environment file (atomically, pretty JSON).
void write_stack_env(const std::string& path, const StackEnv& s);

/// The settable part of an `env --diff` (record against this machine):
/// each differing variable a run can be given (fingerprint fields
/// "env.<NAME>" and "trainer.env.<NAME>", "(unset)" left unset) goes to
/// `record` with the record's value and to `here` with this machine's, and
/// a differing "python.executable" to their "python". Returns the fields
/// used; `left_out` gets the differing fields that cannot be set this way
/// (a library version, LD_LIBRARY_PATH or PYTHONPATH as a whole).
size_t settable_differences(const std::vector<FieldDiff>& diffs, StackEnv& record, StackEnv& here,
                            std::vector<std::string>& left_out);

/// One settable difference of two stacks.
struct EnvDifference {
  enum class Kind { kVariable, kLibraryFolder, kPythonFolder, kInterpreter };
  Kind kind = Kind::kVariable;
  std::string name;   ///< the variable; the folder; the interpreter
  std::string value;  ///< the bad stack's value ("" with `inherit`)
  bool inherit = false;  ///< kVariable: the bad stack leaves it as inherited; a folder: the bad stack lacks it
  /// "ATEN_CPU_CAPABILITY=default", "OMP_PROC_BIND as inherited",
  /// "library folder /opt/b/lib", "without Python folder /opt/a/site",
  /// "interpreter /opt/b/bin/python3".
  std::string label() const;
};

/// The differences from `good` to `bad`, variables by name, then library
/// folders, Python folders, the interpreter.
std::vector<EnvDifference> env_differences(const StackEnv& good, const StackEnv& bad);

/// `base` made to run on the good stack with `applied` of the differences
/// (indices into `all`): its environment entries and interpreter.
ChildRun apply_differences(const ChildRun& base, const StackEnv& good, const std::vector<EnvDifference>& all,
                           const std::vector<size_t>& applied);

/// Zeller's ddmin: the smallest subset of {0..n-1} (1-minimal: removing
/// any one element makes it pass) for which `fails` is true, given that
/// the whole set fails. `fails` is asked each subset once (cached here).
std::vector<size_t> ddmin(size_t n, const std::function<bool(const std::vector<size_t>&)>& fails);

/// What bisect-env is asked.
struct EnvBisectOptions {
  std::string good_env, bad_env;  ///< environment files
  std::vector<std::string> smokes;  ///< smoke config files (one at least)
  int repeats = 2;                ///< runs per tested set, held bit for bit
  std::string out_dir = "lockstep-out";  ///< records: <out_dir>/bisect-env/
  JobSlots* slots = nullptr;
  std::function<void(const std::string&)> on_test;  ///< a line per tested set, as it ends
};

/// One tested set.
struct EnvTest {
  std::vector<size_t> applied;
  bool failed = false;
  std::string why;  ///< the first divergence, or why it counts as not failing
  int runs = 0;
};

/// The outcome.
struct EnvBisectResult {
  ExitCode code = ExitCode::kPass;  ///< 1 found, 2 nothing to search (no difference, or the bad stack passes), 4 a flaky end
  std::vector<EnvDifference> differences;
  std::vector<EnvDifference> culprit;  ///< the smallest set found
  std::string message;  ///< "the curve moves with {ATEN_CPU_CAPABILITY=default} alone"
  std::string divergence;  ///< the culprit set's first divergence
  std::vector<EnvTest> tests;  ///< the ends first
  int runs = 0;
};

/// Searches as above. Throws Error: exit 2 for bad files or options (an
/// interpreter difference for a built-in smoke), exit 3 for the
/// environment.
EnvBisectResult bisect_env(const EnvBisectOptions& options, Launcher& launcher);

}  // namespace lockstep

// Facts about this machine that need no LibTorch: CPU model and ISA flags,
// OS, C library, the numerics environment variables, the NVIDIA driver and
// GPU through their own APIs, and git state. Shared by the built-in run's
// fingerprint (env/fingerprint_capture.h) and the fingerprint of a team's
// own trainer run as a command (external/trainer_run.h), whose stack facts
// (Python, torch, packages) come from the trainer itself.
//
//   Fingerprint fp = machine_fingerprint({"cpu", "smoke/"});
//   std::string isa = cpu_isa_flags();   // "avx avx2 f16c fma sse4_2"
#pragma once

#include <map>
#include <string>

#include "record/fingerprint.h"

namespace lockstep {

/// "(absent: <why>)": the value of a fact that could not be read.
std::string absent_fact(const std::string& why);

/// The value of the first /proc/cpuinfo line starting with `name` ("model
/// name", "flags"); "" when absent.
std::string cpuinfo_field(const std::string& name);

/// The ISA extensions that select different kernels in ATen, oneDNN and
/// BLAS, sorted and space-separated; "(absent: ...)" without /proc/cpuinfo.
std::string cpu_isa_flags();

/// The ATen CPU capability LibTorch 1.13 picks on this CPU, from
/// cpu_isa_flags() and $ATEN_CPU_CAPABILITY: what that variable asks for
/// ("avx512", "avx2", "default") when the CPU has it, else "AVX2" (avx2
/// and fma) or "DEFAULT" -- 1.13 runs its AVX512 kernels only on request,
/// so the key matches the runs of a smoke on the same machine
/// (cpu-x86_64-avx2). For records whose trainer did not report its own
/// (imports, trainers without the Python helper).
std::string cpu_capability_from_isa(const std::string& isa_flags);

/// Which runner made a run (fingerprint field `runner`, informational):
/// "ci runner <CI_RUNNER_DESCRIPTION> (#<CI_RUNNER_ID>)" in a GitLab job,
/// else "host <host name>"; `check --rerun-failing` names it.
std::string runner_identity();

/// PRETTY_NAME of /etc/os-release, or "(absent: ...)".
std::string os_pretty_name();

/// The environment variables recorded because they change numerics or
/// thread placement (name -> determinism-relevant).
const std::map<std::string, bool>& numerics_env_vars();

/// Every environment variable with this prefix that is set is recorded as
/// env.<NAME>, relevant: PyTorch Inductor's settings (torch._inductor.config
/// reads TORCHINDUCTOR_<KEY>).
inline constexpr char kInductorEnvPrefix[] = "TORCHINDUCTOR_";

/// git.commit, git.branch and git.dirty of the repository holding
/// `repo_path` (informational), or "(absent: <why>)" outside one.
void add_git_fields(Fingerprint& fp, const std::string& repo_path);

/// What machine_fingerprint() looks at.
struct MachineOptions {
  std::string device = "cpu";    ///< "cpu" or "cuda": CUDA facts are relevant only for cuda
  std::string repo_path = ".";   ///< where to look for the git repository
  /// The environment the run was given (NAME -> value), recorded as env.NAME
  /// for the numerics variables; empty: this process's environment.
  std::map<std::string, std::string> env;
  bool use_env = false;          ///< read `env` instead of this process's environment
  /// A determinism contract pins the run's thread counts (and they are read
  /// back): OMP_NUM_THREADS and MKL_NUM_THREADS then cannot change a bit
  /// and are informational; relevant when nothing is applied (`env`).
  bool threads_pinned = false;
  /// The NVIDIA libraries asked (a soname searched the usual way, or a
  /// path: tests pass tests/machine/fake_nvidia's).
  std::string cuda_library = "libcuda.so.1";
  std::string nvml_library = "libnvidia-ml.so.1";
};

/// The machine's part of every fingerprint — the one writer of these
/// fields, for a built-in run (env/fingerprint_capture.h adds LibTorch's
/// facts to it) and a team trainer's (which adds its Python's): device,
/// lockstep.version, cpu.arch, cpu.model, cpu.isa, cpu.logical_cores,
/// runner, os.name, os.kernel, os.glibc, env.<numerics variable>,
/// nvidia.driver_version, cuda.driver_api_version, cuda.gpu_name,
/// cuda.compute_capability, cuda.sm_count (relevant on cuda),
/// cuda.memory_bytes, cuda.gpu_uuid (informational), git.commit/branch/dirty.
/// Every field is present whatever the machine: one that cannot be read is
/// "(absent: <why>)" (a CUDA error names the CUresult). Never throws.
Fingerprint machine_fingerprint(const MachineOptions& options);

}  // namespace lockstep

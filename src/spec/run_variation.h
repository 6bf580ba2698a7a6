// What a perturbed repeat varies: conditions a run's values must not depend
// on, changed for one run so that a dependence on them shows as a
// difference from the plain runs of the same job (check's second repeat;
// `lockstep run --vary`). Two identical back-to-back runs never catch a
// result that depends on allocation history (NCCL #2360) or on which CPU a
// thread landed on; a run that varies them does.
//
//   RunVariation v = parse_variation("allocator=70000,env-order");   // BadUsage (exit 2) if malformed
//   variation_spec(v)      == "allocator=70000,env-order"
//   describe_variation(v)  == "a 70000-byte allocator hole before the run; env vars in reverse order"
//   RunVariation one = only_kind(v, "allocator");                     // attribution: one kind at a time
//
// Each kind and where it is applied (docs/equivalence.md, "Perturbed repeats"):
//   allocator=BYTES    a BYTES malloc (64 .. 128 KiB) with a guard after it,
//                      the first freed: a hole in the heap before the run
//                      (lockstep-torch, each rank; the Python helper's
//                      apply_contract);
//   malloc-perturb=N   MALLOC_PERTURB_=N: glibc fills freed memory with N and
//                      fresh memory with its complement (reads of
//                      uninitialised memory move values);
//   affinity=C1+C2     the run's processes pinned to these CPUs (sched_setaffinity;
//                      inherited by every process the run starts);
//   env-order          every started process's environment in reverse order;
//   thread-warmup      the thread pools started before the run, inter-op first
//                      (lockstep-torch; the helper starts the intra-op pool).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"

namespace lockstep {

/// One run's variations; each member at its default varies nothing.
struct RunVariation {
  int64_t allocator_bytes = 0;  ///< > 0: the allocator hole's size in bytes (65536 .. 131071: below malloc's mmap threshold)
  int malloc_perturb = 0;       ///< 1..255: MALLOC_PERTURB_; 0: not set
  CpuSet affinity;              ///< any set: the CPUs the run is pinned to (in place: no allocation)
  bool env_reversed = false;    ///< the environment of every started process in reverse order
  bool thread_warmup = false;   ///< thread pools started before the run, inter-op first

  /// Whether nothing is varied.
  bool empty() const;
  bool operator==(const RunVariation& other) const;
};

/// The kinds, in the order they are applied and named:
/// "allocator", "malloc-perturb", "affinity", "env-order", "thread-warmup".
const std::vector<std::string>& variation_kinds();

/// Parses `--vary SPEC` (or $LOCKSTEP_VARY, how a varied run reaches the
/// processes it starts): kinds separated by ',', each "kind" or
/// "kind=value". A kind without its value takes a random one from `rng`
/// (allocator: 65536..131071 bytes; malloc-perturb: 1..255; affinity: every
/// CPU of `allowed_cpus` but the lowest). A valid spec allocates nothing,
/// so a varied run's heap history differs from a plain run's by its
/// variation only. Throws BadUsage (exit 2) naming `flag` for an unknown or
/// repeated kind, a value out of range, a value given to env-order or
/// thread-warmup, or affinity to a CPU outside `allowed_cpus` (when any is
/// set).
RunVariation parse_variation(std::string_view spec, std::mt19937_64& rng, const CpuSet& allowed_cpus = {},
                             std::string_view flag = "--vary");

/// parse_variation with a generator seeded from std::random_device.
RunVariation parse_variation(std::string_view spec, const CpuSet& allowed_cpus = {}, std::string_view flag = "--vary");

/// The environment variable a varied run is handed to the processes it
/// starts in (lockstep's own children: the command line stays the plain
/// run's, byte for byte; a trainer: python/lockstep's apply_contract).
inline constexpr const char* kVaryVariable = "LOCKSTEP_VARY";

/// The canonical spec, every value written out: parse_variation() of it
/// gives `v` back; "" for an empty variation.
std::string variation_spec(const RunVariation& v);

/// For a person: "a 70000-byte allocator hole before the run;
/// MALLOC_PERTURB_=165; pinned to CPUs 1+2+3; env vars in reverse order; the
/// thread pools started before the run" (the kinds varied, '; ').
std::string describe_variation(const RunVariation& v);

/// The kinds `v` varies, in variation_kinds() order.
std::vector<std::string> varied_kinds(const RunVariation& v);

/// `v` with only `kind` kept (attribution: which of the kinds moves the
/// values); empty when `v` does not vary it.
RunVariation only_kind(const RunVariation& v, const std::string& kind);

/// `v` with only the kinds in `kinds` kept (the ones that moved the values:
/// the smallest variation that reproduces a difference).
RunVariation with_kinds(const RunVariation& v, const std::vector<std::string>& kinds);

/// The record's fingerprint fields for `v` (informational; a repeat's
/// fingerprint is never compared): "vary.allocator" -> "70000",
/// "vary.malloc_perturb" -> "165", "vary.affinity" -> "1+2",
/// "vary.env_order" -> "reversed", "vary.thread_warmup" -> "started first".
std::map<std::string, std::string> variation_fields(const RunVariation& v);

/// A variation of every kind in `kinds` (variation_kinds() names) with
/// values drawn from `rng`: check's perturbed repeat. Affinity is left out
/// when `allowed_cpus` has fewer than two CPUs (nothing to vary).
RunVariation random_variation(const std::vector<std::string>& kinds, std::mt19937_64& rng,
                              const CpuSet& allowed_cpus);

/// `env` ("NAME=value" entries) in the order `v` asks for: reversed with
/// env-order, else as it is.
std::vector<std::string> ordered_environment(std::vector<std::string> env, const RunVariation& v);

}  // namespace lockstep

#include "spec/run_variation.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace lockstep {

namespace {

constexpr int64_t kMinHole = 65536;   // room for a few tensors of a smoke's size
constexpr int64_t kMaxHole = 131071;  // below glibc's default mmap threshold (128 KiB), so the hole stays in the heap

// Reads a decimal integer in [lo, hi] into `out`; false when `text` is not one.
bool read_int(std::string_view text, int64_t lo, int64_t hi, int64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= lo && out <= hi;
}

// Every CPU of `allowed` but the lowest; none when fewer than two.
CpuSet affinity_without_lowest(const CpuSet& allowed) {
  if (allowed.count() < 2) return {};
  CpuSet cpus = allowed;
  for (size_t c = 0; c < cpus.size(); ++c)
    if (cpus.test(c)) {
      cpus.reset(c);
      break;
    }
  return cpus;
}

// Sets one kind of `v` (no allocation unless it throws).
void set_kind(RunVariation& v, std::string_view kind, std::string_view value, bool has_value, std::mt19937_64& rng,
              const CpuSet& allowed, std::string_view flag) {
  auto bad = [&](const std::string& expected) {
    return BadUsage(std::string(flag) + ": " + std::string(kind) + ": expected " + expected + ", got \"" +
                    input_excerpt(std::string(value)) + "\"");
  };
  if (kind == "allocator") {
    int64_t n = 0;
    if (!has_value) n = std::uniform_int_distribution<int64_t>(kMinHole, kMaxHole)(rng);
    else if (!read_int(value, kMinHole, kMaxHole, n))
      throw bad("a hole size in bytes from " + std::to_string(kMinHole) + " to " + std::to_string(kMaxHole) +
                " (below malloc's mmap threshold)");
    v.allocator_bytes = n;
  } else if (kind == "malloc-perturb") {
    int64_t n = 0;
    if (!has_value) n = std::uniform_int_distribution<int64_t>(1, 255)(rng);
    else if (!read_int(value, 1, 255, n)) throw bad("a byte value from 1 to 255 (MALLOC_PERTURB_)");
    v.malloc_perturb = static_cast<int>(n);
  } else if (kind == "affinity") {
    if (!has_value) {
      v.affinity = affinity_without_lowest(allowed);
      if (v.affinity.none())
        throw BadUsage(std::string(flag) + ": affinity: this process may run on " +
                       (allowed.count() == 1 ? "CPU " + cpu_list(allowed) + " only" : std::string("no known CPU")) +
                       ": there is no other set of CPUs to pin it to (leave affinity out)");
      return;
    }
    std::string_view rest = value;
    while (true) {
      const size_t plus = rest.find('+');
      const std::string_view one = rest.substr(0, plus);
      int64_t c = 0;
      if (!read_int(one, 0, static_cast<int64_t>(v.affinity.size()) - 1, c))
        throw bad("CPU numbers from 0 to 1023 joined by '+' (affinity=1+3)");
      if (allowed.any() && !allowed.test(static_cast<size_t>(c)))
        throw BadUsage(std::string(flag) + ": affinity: CPU " + std::string(one) +
                       " is not one this process may run on (" + cpu_list(allowed) + ")");
      if (v.affinity.test(static_cast<size_t>(c))) throw bad("each CPU once");
      v.affinity.set(static_cast<size_t>(c));
      if (plus == std::string_view::npos) break;
      rest = rest.substr(plus + 1);
    }
  } else if (kind == "env-order" || kind == "thread-warmup") {
    if (has_value) throw bad("no value (\"" + std::string(kind) + "\" alone)");
    (kind == "env-order" ? v.env_reversed : v.thread_warmup) = true;
  } else {
    std::string kinds, hint;
    for (const auto& k : variation_kinds()) {
      kinds += (kinds.empty() ? "" : ", ") + k;
      std::string spelled(kind);  // the record's field names use '_' (vary.malloc_perturb)
      std::replace(spelled.begin(), spelled.end(), '_', '-');
      if (spelled == k) hint = " (did you mean '" + k + "'?)";
    }
    throw BadUsage(std::string(flag) + ": unknown kind \"" + input_excerpt(std::string(kind)) + "\"" + hint +
                   " (one of " + kinds + ")");
  }
}

}  // namespace

bool RunVariation::empty() const {
  return allocator_bytes == 0 && malloc_perturb == 0 && affinity.none() && !env_reversed && !thread_warmup;
}

bool RunVariation::operator==(const RunVariation& o) const {
  return allocator_bytes == o.allocator_bytes && malloc_perturb == o.malloc_perturb && affinity == o.affinity &&
         env_reversed == o.env_reversed && thread_warmup == o.thread_warmup;
}

const std::vector<std::string>& variation_kinds() {
  static const std::vector<std::string> kinds = {"allocator", "malloc-perturb", "affinity", "env-order",
                                                 "thread-warmup"};
  return kinds;
}

RunVariation parse_variation(std::string_view spec, std::mt19937_64& rng, const CpuSet& allowed_cpus,
                             std::string_view flag) {
  RunVariation v;
  if (spec.empty())
    throw BadUsage(std::string(flag) + ": expected kinds joined by ',' (e.g. allocator,env-order), got \"\"");
  // Which kinds were given, by their index in variation_kinds().
  static const std::string_view kKinds[] = {"allocator", "malloc-perturb", "affinity", "env-order", "thread-warmup"};
  unsigned seen = 0;
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);  // "a, b" reads as "a,b"
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const size_t eq = item.find('=');
    const std::string_view kind = item.substr(0, eq);
    if (kind.empty())
      throw BadUsage(std::string(flag) + ": an empty kind in \"" + input_excerpt(std::string(spec)) + "\"");
    for (unsigned k = 0; k < std::size(kKinds); ++k)
      if (kind == kKinds[k]) {
        if (seen & (1u << k)) throw BadUsage(std::string(flag) + ": " + std::string(kind) + " given twice");
        seen |= 1u << k;
      }
    set_kind(v, kind, eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1),
             eq != std::string_view::npos, rng, allowed_cpus, flag);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return v;
}

RunVariation parse_variation(std::string_view spec, const CpuSet& allowed_cpus, std::string_view flag) {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device());
  return parse_variation(spec, rng, allowed_cpus, flag);
}

std::string variation_spec(const RunVariation& v) {
  std::string out;
  auto add = [&out](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (v.allocator_bytes > 0) add("allocator=" + std::to_string(v.allocator_bytes));
  if (v.malloc_perturb > 0) add("malloc-perturb=" + std::to_string(v.malloc_perturb));
  if (v.affinity.any()) add("affinity=" + cpu_list(v.affinity));
  if (v.env_reversed) add("env-order");
  if (v.thread_warmup) add("thread-warmup");
  return out;
}

std::string describe_variation(const RunVariation& v) {
  std::string out;
  auto add = [&out](const std::string& item) { out += (out.empty() ? "" : "; ") + item; };
  if (v.allocator_bytes > 0) add("a " + std::to_string(v.allocator_bytes) + "-byte allocator hole before the run");
  if (v.malloc_perturb > 0) add("MALLOC_PERTURB_=" + std::to_string(v.malloc_perturb));
  if (v.affinity.any()) add("pinned to CPU" + std::string(v.affinity.count() > 1 ? "s " : " ") + cpu_list(v.affinity));
  if (v.env_reversed) add("env vars in reverse order");
  if (v.thread_warmup) add("the thread pools started before the run");
  return out;
}

std::vector<std::string> varied_kinds(const RunVariation& v) {
  std::vector<std::string> out;
  for (const auto& k : variation_kinds())
    if (!only_kind(v, k).empty()) out.push_back(k);
  return out;
}

RunVariation only_kind(const RunVariation& v, const std::string& kind) { return with_kinds(v, {kind}); }

RunVariation with_kinds(const RunVariation& v, const std::vector<std::string>& kinds) {
  RunVariation kept;
  for (const auto& kind : kinds) {
    if (kind == "allocator") kept.allocator_bytes = v.allocator_bytes;
    else if (kind == "malloc-perturb") kept.malloc_perturb = v.malloc_perturb;
    else if (kind == "affinity") kept.affinity = v.affinity;
    else if (kind == "env-order") kept.env_reversed = v.env_reversed;
    else if (kind == "thread-warmup") kept.thread_warmup = v.thread_warmup;
  }
  return kept;
}

std::map<std::string, std::string> variation_fields(const RunVariation& v) {
  std::map<std::string, std::string> f;
  if (v.allocator_bytes > 0) f["vary.allocator"] = std::to_string(v.allocator_bytes);
  if (v.malloc_perturb > 0) f["vary.malloc_perturb"] = std::to_string(v.malloc_perturb);
  if (v.affinity.any()) f["vary.affinity"] = cpu_list(v.affinity);
  if (v.env_reversed) f["vary.env_order"] = "reversed";
  if (v.thread_warmup) f["vary.thread_warmup"] = "started first";
  return f;
}

RunVariation random_variation(const std::vector<std::string>& kinds, std::mt19937_64& rng,
                              const CpuSet& allowed_cpus) {
  std::string spec;
  for (const auto& k : kinds) {
    if (k == "affinity" && affinity_without_lowest(allowed_cpus).none()) continue;
    spec += (spec.empty() ? "" : ",") + k;
  }
  return spec.empty() ? RunVariation{} : parse_variation(spec, rng, allowed_cpus, "repeat_varies");
}

std::vector<std::string> ordered_environment(std::vector<std::string> env, const RunVariation& v) {
  if (v.env_reversed) std::reverse(env.begin(), env.end());
  return env;
}

}  // namespace lockstep

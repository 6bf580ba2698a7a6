#include "distributed/rank_group.h"

#include <arpa/inet.h>
#include <link.h>
#include <torch/torch.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "distributed/rank_progress.h"
#include "torch_compat.h"

namespace lockstep {

namespace {

// The path of the loaded shared object whose file name starts with `prefix`
// ("libgloo"), resolved; "" when none is loaded (gloo linked statically).
[[maybe_unused]] std::string loaded_library(const char* prefix) {
  struct Find {
    const char* prefix;
    std::string path;
  } find{prefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Find*>(data);
        if (!info->dlpi_name || !*info->dlpi_name) return 0;
        const char* base = std::strrchr(info->dlpi_name, '/');
        base = base ? base + 1 : info->dlpi_name;
        if (std::strncmp(base, f->prefix, std::strlen(f->prefix)) != 0) return 0;
        char resolved[PATH_MAX];
        f->path = realpath(info->dlpi_name, resolved) ? resolved : info->dlpi_name;
        return 1;
      },
      &find);
  return find.path;
}

// A c10::Error's message without its backtrace; gloo's own exceptions
// (gloo::IoException: a peer closed, a timeout) are std::runtime_error.
[[maybe_unused]] std::string first_line(const std::exception& e) {
  if (const auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  std::string w = e.what();
  return w.substr(0, w.find('\n'));
}

}  // namespace

#if defined(LOCKSTEP_HAVE_GLOO)

struct RankGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::GlooGroup> group;
};

namespace {

bool is_loopback(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  return host == "localhost";
}

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

// The value of `key` in "key=value\n..." text; "(absent)" when none.
std::string fact_value(const std::string& all, const std::string& key) {
  size_t at = ("\n" + all).find("\n" + key + "=");
  if (at == std::string::npos) return "(absent)";
  size_t start = at + key.size() + 1, end = all.find('\n', start);
  return all.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

constexpr const char* kAbortKey = "lockstep/facts/abort";
constexpr const char* kPublishedKey = "lockstep/facts/published";  // ranks that published their facts
constexpr const char* kStoppedKey = "lockstep/facts/stopped";      // ranks that read the abort

// Rank 0 serves the TCPStore: once it stops, every other rank's next store
// call fails ("Broken pipe") before that rank read the verdict. So each
// rank counts itself stopped, and rank 0 keeps serving until every rank
// that published its facts has done so and no more have published for
// kQuiet (the ranks of a node start together, within LibTorch's start-up
// jitter), at most kMostWait.
void let_every_rank_read_the_abort(c10d::Store& store, const RankIdentity& me) {
  constexpr auto kQuiet = std::chrono::milliseconds(1000), kMostWait = std::chrono::milliseconds(10000);
  try {
    store.add(kStoppedKey, 1);
    if (me.rank != 0 || !me.master.set()) return;
    auto start = std::chrono::steady_clock::now(), quiet_since = start;
    int64_t seen = -1;
    while (std::chrono::steady_clock::now() - start < kMostWait) {
      int64_t published = store.add(kPublishedKey, 0), stopped = store.add(kStoppedKey, 0);
      auto now = std::chrono::steady_clock::now();
      if (published != seen) seen = published, quiet_since = now;
      if (stopped >= published && now - quiet_since >= kQuiet) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const std::exception&) {
    // The store is gone: nothing left to serve or to tell.
  }
}

// Every rank of a run on several machines publishes its node's facts and
// compares them with rank 0's (docs/distributed.md). The first rank to see
// a difference publishes it under kAbortKey, so every rank, on every node,
// stops with the same message at once, even when the ranks disagree on
// how many they are (another world size never completes a Gloo rendezvous).
void agree_before_joining(c10d::Store& store, const RankIdentity& me, const NodeFacts& f,
                          std::chrono::milliseconds timeout) {
  std::string mine;
  for (const auto& [k, v] : f.facts) mine += k + "=" + v + "\n";
  auto key_of = [](int r) { return "lockstep/facts/" + std::to_string(r); };
  store.set(key_of(me.rank), bytes(mine));
  store.add(kPublishedKey, 1);
  // The difference of `theirs` (rank r's) from `zero` (rank 0's), as the
  // abort record "fact\nexpected-text"; "" when they agree.
  auto difference = [&](int r, const std::string& theirs, const std::string& zero) -> std::string {
    for (const auto& [k, _] : f.facts) {
      std::string v0 = fact_value(zero, k), vr = fact_value(theirs, k);
      if (v0 == vr) continue;
      // Named by node: every rank of a node has its facts, so whichever
      // notices first, the message is the same.
      return k + "\n" + "the same on every node; node " + std::to_string(r / me.local_ranks()) + " has \"" + vr +
             "\", node 0 \"" + v0 +
             "\" (every node must run the same smoke file, data, overrides, LOCKSTEP_SEED and lockstep, with the "
             "same --nnodes)";
    }
    return "";
  };
  auto stop = [&](const std::string& record) {
    let_every_rank_read_the_abort(store, me);
    size_t nl = record.find('\n');
    if (nl == std::string::npos || nl == 0 || nl + 1 >= record.size())  // not a lockstep rank's
      throw EnvironmentError("rank " + std::to_string(me.rank) + ": the store at " + me.master.describe() +
                             " holds a malformed " + kAbortKey + " (is something other than node 0's lockstep "
                             "serving that port?)");
    throw BadInput(f.file, record.substr(0, nl), record.substr(nl + 1));
  };
  std::vector<std::string> all_keys;
  for (int r = 0; r < me.world_size; ++r) all_keys.push_back(key_of(r));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool compared_with_zero = me.rank == 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (store.check({kAbortKey})) stop(text(store.get(kAbortKey)));
    if (!compared_with_zero && store.check({key_of(0)})) {
      compared_with_zero = true;
      if (std::string d = difference(me.rank, mine, text(store.get(key_of(0)))); !d.empty()) {
        store.set(kAbortKey, bytes(d));
        stop(d);
      }
    }
    if (store.check(all_keys)) {
      std::string zero = text(store.get(key_of(0)));
      for (int r = 1; r < me.world_size; ++r)
        if (std::string d = difference(r, text(store.get(key_of(r))), zero); !d.empty()) {
          store.set(kAbortKey, bytes(d));
          stop(d);
        }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw EnvironmentError("rank " + std::to_string(me.rank) + " of " + std::to_string(me.world_size) +
                         ": not every rank reached the store within the rendezvous timeout");
}

}  // namespace

RankGroup::RankGroup(const RankIdentity& me, std::chrono::milliseconds timeout, RankProgress* progress,
                     const NodeFacts& facts)
    : me_(me), impl_(std::make_unique<Impl>()) {
  std::string where = me.master.set() ? "the TCPStore at " + me.master.describe() + (me.rank == 0 ? " (served by this rank)" : "")
                                      : "the c10d FileStore in " + me.rendezvous;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  std::string interface = iface ? std::string(iface).substr(0, std::string(iface).find(',')) : "";
  try {
    impl_->store = me.master.set()
                       ? compat::make_tcp_store(me.master.host, me.master.port, me.rank == 0, timeout)
                       : compat::make_file_store(me.rendezvous + "/store", me.world_size, timeout);
    if (progress) progress->mark(-1, RankPhase::kRendezvous);
    if (me.nnodes > 1 && !facts.facts.empty()) agree_before_joining(*impl_->store, me, facts, timeout);
    impl_->group = compat::make_gloo_group(impl_->store, me.rank, me.world_size, timeout, interface,
                                           !me.master.set() || is_loopback(me.master.host));
  } catch (const Error&) {
    throw;  // the agreement's own verdict
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me.rank) + " of " + std::to_string(me.world_size) +
                           ": the c10d rendezvous through " + where + " failed: " + first_line(e) +
                           (me.master.set() ? " (every node must run the same smoke with the same --master; node 0 "
                                              "serves the store, and its port must be free there and reachable)"
                                            : ""));
  }
}

RankGroup::~RankGroup() = default;

std::string RankGroup::peer_hint() const {
  return me_.nnodes > 1 ? " (a rank on another node may have stopped first: see that node's job log)" : "";
}

std::map<int, std::string> RankGroup::gather_to_rank0(const std::string& key, const std::string& mine, int first) {
  std::string prefix = "lockstep/" + key + "/";
  std::map<int, std::string> gathered;
  try {
    if (me_.rank >= first) impl_->store->set(prefix + std::to_string(me_.rank), bytes(mine));
    if (me_.rank != 0) return {};
    for (int r = first; r < me_.world_size; ++r) gathered[r] = text(impl_->store->get(prefix + std::to_string(r)));
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me_.rank) + ": gathering " + key +
                           " through the store failed: " + first_line(e) + peer_hint());
  }
  return gathered;
}

void RankGroup::allreduce_sum(torch::Tensor& t, const std::string& what) {
  std::vector<torch::Tensor> ts{t};
  try {
    impl_->group->allreduce(ts)->wait();
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me_.rank) + ": all-reduce of " + what +
                           " failed: " + first_line(e) + peer_hint());
  }
}

torch::Tensor RankGroup::allgather(const torch::Tensor& t, const std::string& what) {
  std::vector<std::vector<torch::Tensor>> out(1);
  for (int r = 0; r < me_.world_size; ++r) out[0].push_back(torch::empty_like(t));
  std::vector<torch::Tensor> in{t};
  try {
    impl_->group->allgather(out, in)->wait();
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me_.rank) + ": all-gather of " + what +
                           " failed: " + first_line(e) + peer_hint());
  }
  return torch::stack(out[0]);
}

void RankGroup::broadcast_from_rank0(torch::Tensor& t, const std::string& what) {
  std::vector<torch::Tensor> ts{t};
  c10d::BroadcastOptions options;
  options.rootRank = 0;
  try {
    impl_->group->broadcast(ts, options)->wait();
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me_.rank) + ": broadcast of " + what +
                           " failed: " + first_line(e) + peer_hint());
  }
}

std::string RankGroup::gloo_version() {
  std::string lib = loaded_library("libgloo");
  return compat::gloo_header_version() + " (gloo/config.h), " + (lib.empty() ? "linked into LibTorch" : lib);
}

#else  // built without gloo headers

struct RankGroup::Impl {};

RankGroup::RankGroup(const RankIdentity& me, std::chrono::milliseconds, RankProgress*, const NodeFacts&) : me_(me) {
  throw EnvironmentError("a distributed smoke needs c10d's Gloo, and this lockstep was built without the gloo "
                         "headers (Debian: apt-get install libgloo-dev, then rebuild)");
}
RankGroup::~RankGroup() = default;
std::string RankGroup::peer_hint() const { return ""; }
std::map<int, std::string> RankGroup::gather_to_rank0(const std::string&, const std::string&, int) { return {}; }
void RankGroup::allreduce_sum(torch::Tensor&, const std::string&) {}
torch::Tensor RankGroup::allgather(const torch::Tensor& t, const std::string&) { return t; }
void RankGroup::broadcast_from_rank0(torch::Tensor&, const std::string&) {}
std::string RankGroup::gloo_version() { return "(absent: built without gloo headers)"; }

#endif

}  // namespace lockstep

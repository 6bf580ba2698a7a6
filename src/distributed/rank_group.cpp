#include "distributed/rank_group.h"

#include <link.h>
#include <torch/torch.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
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
  c10::intrusive_ptr<compat::GlooGroup> group;
};

RankGroup::RankGroup(const RankIdentity& me, std::chrono::milliseconds timeout)
    : me_(me), impl_(std::make_unique<Impl>()) {
  try {
    impl_->group = compat::make_gloo_group(me.rendezvous + "/store", me.rank, me.world_size, timeout);
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me.rank) + " of " + std::to_string(me.world_size) +
                           ": the c10d rendezvous in " + me.rendezvous + " failed: " + first_line(e));
  }
}

RankGroup::~RankGroup() = default;

void RankGroup::allreduce_sum(torch::Tensor& t, const std::string& what) {
  std::vector<torch::Tensor> ts{t};
  try {
    impl_->group->allreduce(ts)->wait();
  } catch (const std::exception& e) {
    throw EnvironmentError("rank " + std::to_string(me_.rank) + ": all-reduce of " + what +
                           " failed: " + first_line(e));
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
                           " failed: " + first_line(e));
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
                           " failed: " + first_line(e));
  }
}

std::string RankGroup::gloo_version() {
  std::string lib = loaded_library("libgloo");
  return compat::gloo_header_version() + " (gloo/config.h), " + (lib.empty() ? "linked into LibTorch" : lib);
}

#else  // built without gloo headers

struct RankGroup::Impl {};

RankGroup::RankGroup(const RankIdentity& me, std::chrono::milliseconds) : me_(me) {
  throw EnvironmentError("a distributed smoke needs c10d's Gloo, and this lockstep was built without the gloo "
                         "headers (Debian: apt-get install libgloo-dev, then rebuild)");
}
RankGroup::~RankGroup() = default;
void RankGroup::allreduce_sum(torch::Tensor&, const std::string&) {}
torch::Tensor RankGroup::allgather(const torch::Tensor& t, const std::string&) { return t; }
void RankGroup::broadcast_from_rank0(torch::Tensor&, const std::string&) {}
std::string RankGroup::gloo_version() { return "(absent: built without gloo headers)"; }

#endif

}  // namespace lockstep

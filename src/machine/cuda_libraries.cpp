#include "machine/cuda_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>

namespace lockstep {

namespace {

std::string three_part(long major, long minor, long patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// A handle to an already loaded library (RTLD_NOLOAD never loads one);
// `soname` names it in messages.
void* handle_of_loaded(const std::string& prefix, const std::string& soname, std::string* path,
                       std::string* why) {
  *path = loaded_library_path(prefix);
  if (path->empty()) {
    if (why) *why = soname + " not loaded in this process";
    return nullptr;
  }
  void* h = dlopen(path->c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h && why) *why = *path + " could not be reopened";
  return h;
}

}  // namespace

std::string loaded_library_path(const std::string& prefix) {
  struct Search {
    const std::string* prefix;
    std::string found;
  } search{&prefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        std::string base = name.substr(name.rfind('/') + 1);
        if (base.rfind(*s->prefix, 0) != 0) return 0;
        char* real = realpath(name.c_str(), nullptr);
        s->found = real ? real : name;
        std::free(real);
        return 1;  // stop at the first
      },
      &search);
  return search.found;
}

std::string cudnn_version_string(std::size_t v) {
  if (v >= 90000) return three_part(v / 10000, v / 100 % 100, v % 100);
  return three_part(v / 1000, v / 100 % 10, v % 100);
}

std::string nccl_version_string(int v) {
  if (v >= 20900) return three_part(v / 10000, v / 100 % 100, v % 100);
  return three_part(v / 1000, v / 100 % 10, v % 100);
}

std::string loaded_cudnn_version(std::string* why) {
  std::string path;
  void* h = handle_of_loaded("libcudnn.so", "libcudnn.so", &path, why);
  if (!h) return "";
  using VersionFn = std::size_t (*)();
  auto get = reinterpret_cast<VersionFn>(dlsym(h, "cudnnGetVersion"));
  std::string out = get ? cudnn_version_string(get()) : "";
  dlclose(h);  // drops the reference RTLD_NOLOAD took; LibTorch keeps its own
  if (out.empty() && why) *why = path + " lacks cudnnGetVersion";
  return out;
}

std::string loaded_nccl_version(std::string* why) {
  std::string path;
  void* h = handle_of_loaded("libnccl.so", "libnccl.so.2", &path, why);
  if (!h) return "";
  using VersionFn = int (*)(int*);
  auto get = reinterpret_cast<VersionFn>(dlsym(h, "ncclGetVersion"));
  int v = 0;
  std::string out = get && get(&v) == 0 ? nccl_version_string(v) : "";
  dlclose(h);
  if (out.empty() && why) *why = path + ": ncclGetVersion failed";
  return out;
}

}  // namespace lockstep

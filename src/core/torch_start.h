// The environment a `lockstep-torch` process starts with. Most of a
// built-in run's time is LibTorch's start-up (Debian's libtorch_cpu loads
// ~290 shared libraries and registers its operators in static
// initializers, before main), and a third of that is page faults: the
// initializers' ~100 MB of small heap blocks, one fault per 4 KiB page.
// glibc's `glibc.malloc.hugetlb=1` tunable (glibc >= 2.35; older ones
// ignore it) makes malloc ask for transparent huge pages (madvise), which
// cuts the faults from ~18,000 to ~7,500 per process. Tunables are read by
// the dynamic loader, before any of our code runs, so the one who starts
// the process sets it: the front's exec of lockstep-torch and the rank
// coordinator. Values do not depend on where memory lies (tensor data is
// 64-byte aligned either way, and ASLR already moves it run to run).
//
//   std::vector<std::string> env = {"PATH=/usr/bin"};
//   env = with_torch_start_tunables(env);   // + "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"
#pragma once

#include <string>
#include <vector>

namespace lockstep {

/// `env` ("NAME=VALUE" entries) with `glibc.malloc.hugetlb=1` added to
/// GLIBC_TUNABLES (appended after a ':' to the tunables already set). Left
/// as it is when GLIBC_TUNABLES names glibc.malloc.hugetlb already: a
/// user's `GLIBC_TUNABLES=glibc.malloc.hugetlb=0` turns it off. Never throws
/// but std::bad_alloc.
std::vector<std::string> with_torch_start_tunables(std::vector<std::string> env);

}  // namespace lockstep

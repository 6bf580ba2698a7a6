// Precompiled header for every LibTorch-facing target (determinism/, env/,
// data/, train/, cli/). LibTorch's headers dominate compile time; compiling
// them once per target keeps a 2-core build in minutes.
#pragma once

#include <torch/torch.h>

// The NCCL part of the multi-rank determinism contract, torch-free: which
// all-reduce algorithm and protocol NCCL may use in strict mode.
//
//   std::map<std::string, std::string> env = {{"NCCL_ALGO", "Tree"}};
//   nccl_contract("strict", env);   // throws exit 3: Tree's reduction order is not fixed
//   nccl_contract("strict", {});    // {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"} to set
//
// Rule (docs/distributed.md, from Megatron-LM's determinism checks and its
// CI): in strict mode NCCL_ALGO must be Ring and NCCL_PROTO Simple. Unset,
// lockstep sets them; set to anything else, the run is refused (exit 3),
// because Tree and the LL/LL128 protocols reduce in an order that depends
// on the topology and message size. Default mode records what is set.
#pragma once

#include <map>
#include <string>

namespace lockstep {

/// The NCCL variables a rank must run with, from `mode` ("strict" or
/// "default") and the variables already set (`env`, name -> value):
/// {"NCCL_ALGO": ..., "NCCL_PROTO": ...}, "(unset)" for one default mode
/// leaves unset. Throws exit-3 Error naming the variable, its value and the
/// rule when strict mode cannot hold.
std::map<std::string, std::string> nccl_contract(const std::string& mode,
                                                 const std::map<std::string, std::string>& env);

}  // namespace lockstep

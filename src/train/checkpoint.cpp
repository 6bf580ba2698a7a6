#include "train/checkpoint.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/torch.h>

#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json_io.h"

namespace lockstep {

namespace {

constexpr const char* kFormat = "lockstep.checkpoint/1";
// The file is the LibTorch archive followed by this marker and the archive's
// XXH3-128 (32 hex digits): a flipped byte is caught before anything loads.
constexpr const char* kTrailer = "\nlockstep-xxh3-128:";
constexpr size_t kTrailerSize = 19 + 32;

// Tensors are stored under positional keys: parameter names contain dots,
// which archive keys may not.
std::string key(const char* kind, size_t i) { return std::string(kind) + "_" + std::to_string(i); }

at::Generator default_generator(bool cuda) {
  return cuda ? at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, 0))
              : at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
}

}  // namespace

void save_checkpoint(const std::string& path, const CheckpointState& st, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer, bool cuda) {
  nlohmann::json meta = {{"format", kFormat},       {"config_hash", st.config_hash}, {"seed", st.seed},
                         {"step", st.step},         {"epoch", st.epoch},             {"batch_in_epoch", st.batch_in_epoch}};
  if (!st.values_hash.empty()) meta["values_hash"] = st.values_hash;
  for (const auto& [name, s] : st.series) meta["series"][name] = to_json(s);
  for (const auto& [name, s] : st.init) meta["init"][name] = to_json(s);
  meta["train_probes"] = nlohmann::json::array();
  for (const auto& p : st.train_probes) meta["train_probes"].push_back(to_json(p));
  meta["step_time_s"] = nlohmann::json::array();
  meta["parameters"] = nlohmann::json::array();
  meta["buffers"] = nlohmann::json::array();
  for (double t : st.step_time_s) meta["step_time_s"].push_back(double_to_json(t));
  if (!st.module_trace.empty()) meta["module_trace"] = to_json(st.module_trace);
  if (!st.digests.empty()) meta["digests"] = to_json(st.digests);
  meta["contract"] = st.contract;
  if (st.rank >= 0) {
    meta["rank"] = st.rank;
    meta["world_size"] = st.world_size;
  }

  torch::serialize::OutputArchive archive;
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (const auto& p : model.named_parameters()) {
    meta["parameters"].push_back(p.key());
    archive.write(key("param", i++), p.value().detach().to(torch::kCPU));
  }
  i = 0;
  for (const auto& b : model.named_buffers()) {
    meta["buffers"].push_back(b.key());
    archive.write(key("buffer", i++), b.value().to(torch::kCPU), /*is_buffer=*/true);
  }
  torch::serialize::OutputArchive opt;
  optimizer.save(opt);
  archive.write("optimizer", opt);
  {
    at::Generator gen = default_generator(false);
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("rng_cpu", gen.get_state());
  }
  if (cuda) {
    at::Generator gen = default_generator(true);
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("rng_cuda", gen.get_state());
  }
  archive.write("meta", c10::IValue(canonical_dump(meta)));
  std::ostringstream out;
  archive.save_to(out);
  std::string bytes = out.str();
  std::string digest = xxh3_128_hex(bytes.data(), bytes.size());
  write_file_atomically(path, bytes + kTrailer + digest);
}

namespace {

// The checkpoint's JSON metadata: step, epoch, the run's records so far,
// its contract and rank. Exit 2 naming the field.
CheckpointState read_checkpoint_meta(const JsonView& m) {
  if (m.at("format").as_string() != kFormat) m.at("format").fail(std::string("\"") + kFormat + "\"");
  CheckpointState st;
  st.config_hash = m.at("config_hash").as_string();
  if (m.has("values_hash")) st.values_hash = m.at("values_hash").as_string();
  st.seed = m.at("seed").as_uint();
  st.step = m.at("step").as_int(1);
  st.epoch = m.at("epoch").as_uint();
  st.batch_in_epoch = m.at("batch_in_epoch").as_int(0);
  if (m.has("series"))
    for (const auto& k : m.at("series").keys()) st.series[k] = series_from_json(m.at("series").at(k));
  if (m.has("init"))
    for (const auto& k : m.at("init").keys()) st.init[k] = init_stats_from_json(m.at("init").at(k));
  JsonView probes = m.at("train_probes");
  for (size_t i = 0; i < probes.size(); ++i) st.train_probes.push_back(batch_probe_from_json(probes.at(i)));
  if (m.has("module_trace")) st.module_trace = module_trace_from_json(m.at("module_trace"));
  if (m.has("digests")) st.digests = step_digests_from_json(m.at("digests"), st.step);
  if (m.has("contract"))
    for (const auto& k : m.at("contract").keys()) st.contract[k] = m.at("contract").at(k).as_string();
  if (m.has("rank")) {
    st.world_size = static_cast<int>(m.at("world_size").as_int(1, 64));
    st.rank = static_cast<int>(m.at("rank").as_int(0, st.world_size - 1));
  }
  JsonView times = m.at("step_time_s");
  for (size_t i = 0; i < times.size(); ++i) st.step_time_s.push_back(times.at(i).as_finite(0, 1e9));
  return st;
}

// Copies the stored tensors of `kind` ("param", "buffer") into `live`,
// whose names, shapes and dtypes must be the stored ones (list `list` of
// the metadata), in order. Exit 2 naming the first that is not.
void restore_tensors(const std::string& path, torch::serialize::InputArchive& archive, const JsonView& m,
                     const char* kind, const char* list, const std::vector<std::pair<std::string, torch::Tensor>>& live) {
  torch::NoGradGuard no_grad;
  JsonView names = m.at(list);
  if (names.size() != live.size())
    names.fail(std::to_string(live.size()) + " " + list + " (the model's), got " + std::to_string(names.size()));
  for (size_t i = 0; i < live.size(); ++i) {
    if (names.at(i).as_string() != live[i].first) names.at(i).fail("\"" + live[i].first + "\" (the model's " + list + " in order)");
    torch::Tensor saved;
    try {
      archive.read(key(kind, i), saved, /*is_buffer=*/std::string(kind) == "buffer");
    } catch (const c10::Error&) {
      throw BadInput(path, key(kind, i), "a stored tensor for " + live[i].first);
    }
    if (!saved.defined() || saved.sizes() != live[i].second.sizes() || saved.dtype() != live[i].second.dtype())
      throw BadInput(path, key(kind, i), "a tensor of the shape and dtype of " + live[i].first);
    live[i].second.copy_(saved);
  }
}

// The optimiser's state and, unless told not to, the default generators'.
void restore_optimizer_and_generators(const std::string& path, torch::serialize::InputArchive& archive,
                                      torch::optim::Optimizer& optimizer, bool cuda, bool restore_generators) {
  try {
    torch::serialize::InputArchive opt;
    archive.read("optimizer", opt);
    optimizer.load(opt);
    for (bool on_cuda : {false, true}) {
      if (!restore_generators || (on_cuda && !cuda)) continue;
      torch::Tensor state;
      archive.read(on_cuda ? "rng_cuda" : "rng_cpu", state);
      at::Generator gen = default_generator(on_cuda);
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
  } catch (const c10::Error& e) {
    throw BadInput(path, "optimizer/generators",
                   "optimiser and generator state this model and device can load (" +
                       std::string(e.what_without_backtrace()) + ")");
  }
}

}  // namespace

CheckpointState load_checkpoint(const std::string& path, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, bool cuda, bool restore_generators) {
  std::string bytes = read_file(path);
  size_t body = bytes.size() >= kTrailerSize ? bytes.size() - kTrailerSize : 0;
  if (bytes.size() < kTrailerSize || bytes.compare(body, kTrailerSize - 32, kTrailer) != 0 ||
      bytes.compare(body + kTrailerSize - 32, 32, xxh3_128_hex(bytes.data(), body)) != 0)
    throw BadInput(path, "(file)", std::string("a lockstep checkpoint (") + kFormat +
                                       ") whose content hash matches its trailer (the file is truncated, "
                                       "corrupted or not a checkpoint)");
  torch::serialize::InputArchive archive;
  c10::IValue meta_value;
  try {
    archive.load_from(bytes.data(), body);
    archive.read("meta", meta_value);
  } catch (const c10::Error&) {
    throw BadInput(path, "(file)", std::string("a lockstep checkpoint (") + kFormat +
                                       "), but LibTorch cannot read it as one (truncated or another format)");
  }
  if (!meta_value.isString()) throw BadInput(path, "meta", "a JSON string");
  std::string meta_label = path + " (meta)";
  nlohmann::json doc = parse_json_text(meta_value.toStringRef(), meta_label);
  JsonView m(doc, meta_label);
  CheckpointState st = read_checkpoint_meta(m);
  std::vector<std::pair<std::string, torch::Tensor>> params, buffers;
  for (const auto& p : model.named_parameters()) params.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) buffers.emplace_back(b.key(), b.value());
  restore_tensors(path, archive, m, "param", "parameters", params);
  restore_tensors(path, archive, m, "buffer", "buffers", buffers);
  restore_optimizer_and_generators(path, archive, optimizer, cuda, restore_generators);
  return st;
}

}  // namespace lockstep

#include "run/batch_sweep.h"

#include <torch/torch.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/float_bits.h"
#include "data/loader.h"
#include "run/smoke_run.h"
#include "train/models.h"
#include "train/module_tracer.h"

namespace lockstep {

namespace {

using Outputs = std::vector<ModuleTracer::KeptCall>;

// The row of the model's own output (after its modules' rows).
constexpr const char* kModelOutput = "(model output)";

// "torch::nn::LinearImpl" -> "Linear"; a model's own class keeps its name.
std::string module_type(const torch::nn::Module& m) {
  std::string n = m.name();
  if (size_t colon = n.rfind("::"); colon != std::string::npos) n = n.substr(colon + 2);
  if (n.size() > 4 && n.compare(n.size() - 4, 4, "Impl") == 0) n.resize(n.size() - 4);
  return n;
}

// The trace keys of one forward, a key called again numbered "#2", "#3".
std::vector<std::string> call_names(const Outputs& outputs) {
  std::map<std::string, int> seen;
  std::vector<std::string> names;
  for (const auto& call : outputs) {
    int n = ++seen[call.name];
    names.push_back(n == 1 ? call.name : call.name + "#" + std::to_string(n));
  }
  return names;
}

// The first batch of epoch 0, as the smoke's loader gives it.
torch::Tensor first_batch(const SmokeConfig& cfg, uint64_t seed, std::shared_ptr<const CsvTable> table) {
  SmokeLoader loader(std::move(table), cfg.data.loader, seed);
  torch::Tensor inputs;
  loader.run_epoch(0, [&inputs](int64_t, SmokeBatch& b) {
    inputs = b.inputs.clone();
    return false;
  });
  if (!inputs.defined())
    throw BadInput(cfg.file, "data.batch_size",
                   "a batch the data can fill (no batch to sweep: " + std::to_string(cfg.data.loader.batch_size) +
                       " samples a batch with drop_last leaves none)");
  return inputs;
}

// A float32's bit pattern as an integer in the order of the floats (the
// ULP distance of two is the difference).
inline int64_t ordered_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? int64_t{INT32_MIN} - i : i;
}

// Adds the ULP and absolute distances of the differing elements of one
// row pair (`width` values of type T) to `cell`; ULPs in T's own precision.
template <typename T>
void add_row_distance(const T* a, const T* b, int64_t width, SweepCell& cell) {
  for (int64_t i = 0; i < width; ++i) {
    if (a[i] == b[i]) continue;  // equal values (signed zeros alike: 0 ULP apart)
    uint64_t ulp;
    if constexpr (std::is_same<T, float>::value)
      ulp = std::isnan(a[i]) || std::isnan(b[i]) ? ulp_distance_f32(a[i], b[i])
                                                 : static_cast<uint64_t>(std::llabs(ordered_bits(a[i]) - ordered_bits(b[i])));
    else
      ulp = ulp_distance(static_cast<double>(a[i]), static_cast<double>(b[i]));
    cell.max_ulp = std::max(cell.max_ulp, ulp);
    cell.max_abs = std::max(cell.max_abs, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
}

// The batch dimension of a module's output: the one dimension whose size
// is `batch` in the whole batch's output and `m` in a piece's; -1 when the
// shapes do not say (no batch dimension).
int64_t batch_dim(const torch::Tensor& whole, const torch::Tensor& part, int64_t batch, int64_t m) {
  if (whole.dim() != part.dim()) return -1;
  int64_t dim = -1, differing = 0;
  for (int64_t d = 0; d < whole.dim(); ++d)
    if (whole.size(d) != part.size(d)) {
      ++differing;
      if (whole.size(d) == batch && part.size(d) == m) dim = d;
    }
  return differing == 1 ? dim : -1;
}

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const torch::Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<size_t>(ca.numel()) * ca.element_size()) == 0;
}

// Marks in `rows` (one per sample of the batch) the samples whose tensor
// differs between the whole batch (`whole`) and the pieces of one size
// (`parts`, in batch order, `n` samples each but the last): the pieces
// joined along the batch dimension and held row by row. With `cell`, adds
// the differing elements' distances to it. Returns false when the tensor
// has no batch dimension: each piece's is then held whole to the batch's,
// its samples marked when it differs.
bool differing_rows(const torch::Tensor& whole, const std::vector<torch::Tensor>& parts, int64_t batch, int64_t n,
                    std::vector<char>& rows, SweepCell* cell) {
  rows.assign(static_cast<size_t>(batch), 0);
  const int64_t dim = batch_dim(whole, parts.front(), batch, std::min(n, batch));
  if (dim < 0) {
    for (size_t k = 0; k < parts.size(); ++k)
      if (!same_bytes(whole, parts[k].cpu()))
        for (int64_t r = static_cast<int64_t>(k) * n; r < std::min(batch, static_cast<int64_t>(k + 1) * n); ++r)
          rows[static_cast<size_t>(r)] = 1;
    return false;
  }
  const torch::Tensor a = whole.movedim(dim, 0).contiguous().reshape({batch, -1});
  const torch::Tensor b = torch::cat(parts, dim).cpu().movedim(dim, 0).contiguous().reshape({batch, -1});
  const int64_t width = a.size(1);
  const size_t row_bytes = static_cast<size_t>(width) * a.element_size();
  const char* pa = static_cast<const char*>(a.data_ptr());
  const char* pb = static_cast<const char*>(b.data_ptr());
  for (int64_t r = 0; r < batch; ++r) {
    if (std::memcmp(pa + r * row_bytes, pb + r * row_bytes, row_bytes) == 0) continue;
    rows[static_cast<size_t>(r)] = 1;
    if (!cell) continue;
    if (a.scalar_type() == torch::kFloat)
      add_row_distance(a.data_ptr<float>() + r * width, b.data_ptr<float>() + r * width, width, *cell);
    else if (a.scalar_type() == torch::kDouble)
      add_row_distance(a.data_ptr<double>() + r * width, b.data_ptr<double>() + r * width, width, *cell);
  }
  return true;
}

// One module at one size: its outputs' differing samples into `cell`, and
// of those, the ones whose input was the whole batch's bit for bit (the
// difference starts in this module). Returns false when the output has no
// batch dimension.
bool compare_size(const ModuleTracer::KeptCall& whole, const std::vector<ModuleTracer::KeptCall>& parts,
                  int64_t batch, int64_t n, SweepCell& cell) {
  std::vector<torch::Tensor> outs, ins;
  for (const auto& p : parts) outs.push_back(p.out);
  std::vector<char> out_rows, in_rows;
  const bool per_sample = differing_rows(whole.out, outs, batch, n, out_rows, &cell);
  const int64_t differ = std::count(out_rows.begin(), out_rows.end(), 1);
  cell.samples_differ += differ;
  if (differ == 0) return per_sample;  // nothing to attribute: the inputs are not compared
  for (const auto& p : parts) ins.push_back(p.in);
  differing_rows(whole.in, ins, batch, n, in_rows, nullptr);
  for (size_t r = 0; r < out_rows.size(); ++r)
    if (out_rows[r] && !in_rows[r]) ++cell.samples_new;
  return per_sample;
}

}  // namespace

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The model of a sweep, as initialised from the seed, in eval mode, with
// its module calls kept (the tracer traces no step: outputs only).
class SweptModel {
 public:
  SweptModel(const SmokeConfig& cfg, uint64_t seed, torch::Device device) : tracer_(no_trace()) {
    model_ = make_model(cfg.model, cfg.data.loader.sample_shape, cfg.classes);
    if (cfg.model.name != "torchscript") init_parameters(*model_, seed);
    model_->to(device);
    model_->eval();
    model_->set_tracer(&tracer_);
  }
  ~SweptModel() { model_->set_tracer(nullptr); }

  void forward(const torch::Tensor& in) { model_->forward(in); }

  // The modules' calls, and the model's own output last: a TorchScript
  // module that is not an nn.Sequential shows no submodule (its forward is
  // compiled code), so its output is the one compared. Its input is the
  // last module's output (a difference it only carries on is then not its
  // own), or the model's input.
  Outputs forward_kept(const torch::Tensor& in) {
    Outputs kept;
    tracer_.keep_outputs(&kept);
    torch::Tensor y = model_->forward(in);
    tracer_.keep_outputs(nullptr);
    torch::Tensor last = kept.empty() ? in.detach() : kept.back().out;
    kept.push_back({kModelOutput, last, y.detach()});
    return kept;
  }

  // One row per call of `whole`, with LibTorch's type of its module.
  std::vector<ModuleSweep> rows(const Outputs& whole) const {
    std::map<std::string, std::string> types;
    for (const auto& item : model_->named_modules("", /*include_self=*/false))
      types[item.key()] = module_type(*item.value());
    std::vector<ModuleSweep> out;
    for (const auto& name : call_names(whole)) {
      ModuleSweep m;
      m.module = name;
      auto t = types.find(name.substr(0, name.find('#')));
      if (t != types.end()) m.type = t->second;
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  static TraceSpec no_trace() {
    TraceSpec off;
    off.steps = 0;
    return off;
  }
  std::shared_ptr<SmokeModel> model_;
  ModuleTracer tracer_;
};

// One size `n` of sweep `out`: the pieces of `x` forwarded with their calls
// kept, each module's held to the whole batch's (`whole`) into `cells` (one
// per module); the seconds it took.
double sweep_size(SweptModel& model, const torch::Tensor& x, const Outputs& whole, int64_t n, BatchSweep& out,
                  std::vector<SweepCell>& cells) {
  const auto t0 = Clock::now();
  std::vector<Outputs> parts(whole.size());  // per module, the pieces' calls
  for (int64_t start = 0; start < out.batch; start += n) {
    const int64_t len = std::min(n, out.batch - start);
    Outputs piece = model.forward_kept(x.narrow(0, start, len));
    if (piece.size() != whole.size())
      throw EnvironmentError("--batch-sweep: " + out.smoke + "'s model calls " + std::to_string(piece.size()) +
                             " modules for " + std::to_string(len) + " samples and " + std::to_string(whole.size()) +
                             " for " + std::to_string(out.batch) + ": it is not one forward per batch");
    for (size_t i = 0; i < whole.size(); ++i) parts[i].push_back(std::move(piece[i]));
  }
  for (size_t i = 0; i < whole.size(); ++i)
    if (!compare_size(whole[i], parts[i], out.batch, n, cells[i])) out.modules[i].per_sample = false;
  return seconds_since(t0);
}

}  // namespace

BatchSweep sweep_batch_invariance(const SmokeConfig& cfg, bool time_plain) {
  if (cfg.has_trainer())
    throw BadUsage("--batch-sweep: " + cfg.file + " runs a team's trainer, whose model is its own; the sweep is for "
                   "a built-in smoke's model");
  const uint64_t seed = base_seed(cfg).first;
  std::shared_ptr<const CsvTable> table;
  prepare_smoke(cfg, seed, table);
  const torch::Device device(cfg.device == "cuda" ? torch::kCUDA : torch::kCPU);
  torch::Tensor x = first_batch(cfg, seed, table).to(device);
  BatchSweep out;
  out.smoke = cfg.name;
  out.device = cfg.device;
  out.batch = x.size(0);
  if (out.batch < 2)
    throw BadUsage("--batch-sweep: " + cfg.file + ": the first batch holds " + std::to_string(out.batch) +
                   " sample: nothing to split (data.batch_size 2 or more)");
  for (int64_t n = out.batch; n >= 1; n /= 2) out.sizes.push_back(n);

  torch::NoGradGuard no_grad;
  SweptModel model(cfg, seed, device);
  model.forward(x);  // warm-up: lazy initialisation is no forward's cost
  const auto f0 = Clock::now();
  model.forward(x);
  out.forward_s = seconds_since(f0);
  Outputs whole = model.forward_kept(x);
  for (auto& w : whole) {
    w.in = w.in.cpu();
    w.out = w.out.cpu();
  }
  out.modules = model.rows(whole);
  // The bench's timing: the best of kTimed passes each way (a small
  // model's forward takes microseconds, below one pass's noise).
  constexpr int kTimed = 25;
  for (size_t k = 1; k < out.sizes.size(); ++k) {
    const int64_t n = out.sizes[k];
    std::vector<SweepCell> cells(out.modules.size(), SweepCell{n, 0, 0, 0, 0, 0, 0});
    double plain = 0, seconds = sweep_size(model, x, whole, n, out, cells);
    for (int r = 0; time_plain && r < kTimed; ++r) {
      if (r == 0) plain = seconds = std::numeric_limits<double>::infinity();
      const auto p0 = Clock::now();
      for (int64_t start = 0; start < out.batch; start += n) model.forward(x.narrow(0, start, std::min(n, out.batch - start)));
      plain = std::min(plain, seconds_since(p0));
      std::vector<SweepCell> scratch(out.modules.size(), SweepCell{n, 0, 0, 0, 0, 0, 0});
      seconds = std::min(seconds, sweep_size(model, x, whole, n, out, scratch));
    }
    for (size_t i = 0; i < out.modules.size(); ++i) {
      cells[i].seconds = seconds;
      cells[i].plain_seconds = plain;
      out.modules[i].cells.push_back(cells[i]);
    }
  }
  return out;
}

}  // namespace lockstep

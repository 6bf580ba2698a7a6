// A TorchScript module built in C++ with Module::define trains in the smoke
// trainer and is recorded; bad modules are exit-2 errors.
#include "train/torchscript_model.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/loader.h"
#include "data/synthetic_source.h"
#include "train/trainer.h"
#include "test_paths.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-ts-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

// forward(x) = fc(relu(x.flatten(1) @ w)), with fc a submodule.
std::string save_fixture(bool trainable) {
  torch::jit::Module fc("Fc");
  fc.register_parameter("weight", torch::full({3, 8}, 0.05), false);
  fc.register_parameter("bias", torch::zeros({3}), false);
  fc.define(R"(
    def forward(self, h):
        return h.matmul(self.weight.t()) + self.bias
  )");
  torch::jit::Module net("Net");
  net.register_parameter("w", torch::linspace(-0.1, 0.1, 13 * 8).reshape({13, 8}), false);
  net.register_module("fc", fc);
  net.define(R"(
    def forward(self, x):
        return self.fc.forward(torch.relu(x.flatten(1).matmul(self.w)))
  )");
  if (trainable)
    for (auto p : net.parameters()) p.set_requires_grad(true);
  std::string path = temp_path(trainable ? "net.pt" : "frozen.pt");
  net.save(path);
  return path;
}

// 64 synthetic rows of 13 features and 3 classes, batches of 16.
SmokeLoader tabular_loader() {
  SyntheticOptions o{SyntheticOptions::Kind::kTabular, 64, 0};
  auto table = std::make_shared<CsvTable>(make_synthetic(o, {13}, 3, 7));
  LoaderSpec ls;
  ls.sample_shape = {13};
  ls.batch_size = 16;
  return SmokeLoader(table, ls, 7);
}

TEST(TorchScriptModel, ModuleDefinedInCppTrainsAndIsRecorded) {
  std::string path = save_fixture(true);
  auto model = load_torchscript_model(path);
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"w", "fc.weight", "fc.bias"}));

  SmokeLoader loader = tabular_loader();
  TrainSpec spec;
  spec.steps = 5;
  spec.model.name = "torchscript";
  spec.model.path = path;
  spec.sample_shape = {13};
  spec.classes = 3;
  spec.optimizer.schedule.base_lr = 0.1;
  TrainResult a = train_smoke(spec, loader, 7);
  ASSERT_EQ(a.series.at("loss").values.size(), 5u);
  for (const char* s : {"grad_norm/w", "grad_norm/fc.weight", "grad_norm/fc.bias"})
    EXPECT_EQ(a.series.at(s).values.size(), 5u) << s;
  EXPECT_GT(a.series.at("grad_norm/fc.bias").values[0], 0.0);
  // The optimiser moved the tensors the TorchScript forward reads: the
  // loss changes from step to step.
  EXPECT_NE(a.series.at("loss").values[0], a.series.at("loss").values[4]);
  EXPECT_EQ(a.init.count("fc.weight"), 1u);
  EXPECT_EQ(a.init.at("fc.weight").mean, 0.05f);  // saved weights are kept, not re-initialised

  // Per-step digests: one of the gradients and one of the parameters a step.
  ASSERT_EQ(a.digests.params.size(), 5u);
  ASSERT_EQ(a.digests.grads.size(), 5u);
  EXPECT_TRUE(a.digests.steps.empty());
  for (size_t k = 1; k < 5; ++k) EXPECT_NE(a.digests.params[k], a.digests.params[k - 1]) << "step " << k;

  TrainResult b = train_smoke(spec, loader, 7);  // and it is deterministic
  EXPECT_EQ(a.series.at("loss").values, b.series.at("loss").values);
  EXPECT_EQ(a.hashes, b.hashes);
  EXPECT_EQ(a.digests.params, b.digests.params);
  EXPECT_EQ(a.digests.grads, b.digests.grads);
}

// A module named like nn.Sequential whose forward calls its children in order.
std::string save_sequential() {
  torch::jit::Module a("A"), b("B");
  a.register_parameter("w", torch::linspace(-0.1, 0.1, 13 * 8).reshape({13, 8}), /*is_buffer=*/false);
  a.define("def forward(self, x):\n    return torch.relu(x.flatten(1).matmul(self.w))\n");
  b.register_parameter("w", torch::full({8, 3}, 0.05), /*is_buffer=*/false);
  b.define("def forward(self, h):\n    return h.matmul(self.w)\n");
  torch::jit::Module seq("__torch__.torch.nn.modules.container.Sequential");
  seq.register_module("first", a);
  seq.register_module("second", b);
  seq.define("def forward(self, x):\n    return self.second.forward(self.first.forward(x))\n");
  for (auto p : seq.parameters()) p.set_requires_grad(true);
  std::string path = temp_path("seq.pt");
  seq.save(path);
  return path;
}

TEST(TorchScriptModel, ASequentialIsTracedByItsChildrenAndAnyOtherModuleSaysWhyNot) {
  SmokeLoader loader = tabular_loader();
  TrainSpec spec;
  spec.steps = 3;
  spec.model.name = "torchscript";
  spec.model.path = save_sequential();
  spec.sample_shape = {13};
  spec.classes = 3;
  spec.optimizer.schedule.base_lr = 0.1;
  TrainResult traced = train_smoke(spec, loader, 7);
  std::vector<std::string> order;
  for (const auto& e : traced.module_trace.entries)
    order.push_back(std::to_string(e.step) + " " + trace_phase_name(e.phase) + " " + e.module);
  EXPECT_EQ(order, (std::vector<std::string>{"0 forward first", "0 forward second", "0 backward second",
                                             "1 forward first", "1 forward second", "1 backward second"}));
  spec.trace.steps = 0;  // the children one by one compute the same bits as the module's own forward
  TrainResult plain = train_smoke(spec, loader, 7);
  EXPECT_EQ(traced.series.at("loss").values, plain.series.at("loss").values);
  EXPECT_EQ(traced.hashes, plain.hashes);
  EXPECT_TRUE(plain.module_trace.empty());

  spec.trace.steps = 2;
  spec.model.path = save_fixture(true);
  TrainResult other = train_smoke(spec, loader, 7);
  EXPECT_TRUE(other.module_trace.entries.empty());
  EXPECT_EQ(other.module_trace.not_traced,
            "TorchScript module __torch__.Net: its forward is compiled code whose submodule calls lockstep cannot "
            "see (only an nn.Sequential's children are traced; the Python helper traces any module)");
}

TEST(TorchScriptModel, FrozenParametersAndNonModulesAreExit2) {
  try {
    load_torchscript_model(save_fixture(false));
    FAIL() << "frozen parameters accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("frozen.pt: parameters.w: expected a parameter that requires grad"),
              std::string::npos) << e.what();
  }
  std::string junk = temp_path("junk.pt");
  write_file_atomically(junk, "not a zip archive");
  try {
    load_torchscript_model(junk);
    FAIL() << "junk accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("junk.pt: (file): expected a TorchScript module"), std::string::npos)
        << e.what();
  }
}

// Through the CLI: a smoke config naming the module (path relative to the
// config) runs, and the record carries its gradients and its file hash.
TEST(TorchScriptModel, SmokeConfigRunsThroughTheCli) {
  std::string module = save_fixture(true);
  fs::path dir = fs::path(module).parent_path();
  write_file_atomically((dir / "ts.json").string(), R"({
    "name": "ts", "seed": 5, "steps": 3,
    "data": {"source": "synthetic", "synthetic": {"kind": "tabular", "rows": 48},
             "sample_shape": [13], "batch_size": 16},
    "model": {"name": "torchscript", "path": "net.pt", "classes": 3},
    "optimizer": {"name": "sgd", "lr": 0.1}
  })");
  std::string out = (dir / "ts.run.json").string();
  std::string cmd = test_paths::lockstep_binary() + " run " + (dir / "ts.json").string() + " --quiet --record " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = read_file(out);
  EXPECT_NE(text.find("\"grad_norm/fc.weight\""), std::string::npos);
  nlohmann::json rec = nlohmann::json::parse(text);
  EXPECT_EQ(rec["fingerprint"]["model.torchscript_xxh3"]["value"], torchscript_content_xxh3(module));
  EXPECT_EQ(rec["fingerprint"]["model.torchscript_xxh3"]["input"], true);
  EXPECT_EQ(rec["fingerprint"]["model.torchscript_xxh3"]["relevant"], false);
  EXPECT_EQ(rec["fingerprint"]["model.path"]["value"], module);
}

// The model's input hash covers what it computes: the same module saved
// twice into different archives hashes the same; other weights or other
// code do not.
TEST(TorchScriptModel, ContentHashIgnoresTheArchiveAndSeesCodeAndWeights) {
  std::string a = save_fixture(true);
  torch::jit::Module m = torch::jit::load(a);
  std::string b = temp_path("net-again.pt");
  m.save(b, {{"note.txt", "exported again, with an extra file"}});
  ASSERT_NE(read_file(a), read_file(b));  // other zip bytes
  EXPECT_EQ(torchscript_content_xxh3(a), torchscript_content_xxh3(b));

  torch::NoGradGuard no_grad;
  m.attr("w").toTensor().add_(1e-7);
  std::string c = temp_path("net-weight.pt");
  m.save(c);
  EXPECT_NE(torchscript_content_xxh3(c), torchscript_content_xxh3(a));

  torch::jit::Module other = torch::jit::load(a);
  other.define(R"(
    def scaled(self, x):
        return x * 2.0
  )");
  std::string d = temp_path("net-code.pt");
  other.save(d);
  EXPECT_NE(torchscript_content_xxh3(d), torchscript_content_xxh3(a));
}

TEST(SyntheticSource, SameSeedSameBytesAndKindsHaveTheirShapes) {
  SyntheticOptions tokens{SyntheticOptions::Kind::kTokens, 100, 32};
  CsvTable a = make_synthetic(tokens, {16}, 4, 11), b = make_synthetic(tokens, {16}, 4, 11);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.file_xxh3, b.file_xxh3);
  EXPECT_TRUE(a.integer_features);
  for (int64_t r = 0; r < a.rows; ++r) EXPECT_EQ(a.labels[r], static_cast<int64_t>(a.values[r * 16]) % 4);
  EXPECT_NE(make_synthetic(tokens, {16}, 4, 12).file_xxh3, a.file_xxh3);

  CsvTable img = make_synthetic({SyntheticOptions::Kind::kImages, 10, 0}, {1, 8, 8}, 4, 11);
  EXPECT_EQ(img.features, 64);
  EXPECT_FALSE(img.integer_features);
  // The class stripe: row (label mod 8) is 0.5 brighter than the noise bound.
  for (int64_t r = 0; r < img.rows; ++r)
    EXPECT_GE(img.values[r * 64 + (img.labels[r] % 8) * 8], 0.5f);
  EXPECT_THROW(make_synthetic(tokens, {4, 4}, 4, 11), Error);
}

}  // namespace
}  // namespace lockstep

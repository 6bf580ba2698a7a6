// The batch-invariance sweep (run/batch_sweep.h) on TorchScript
// nn.Sequential models built here: elementwise children are
// batch-invariant on any stack; a child that centres the batch (x minus the
// batch mean) couples the samples, and the sweep names it at the first
// piece size, with every sample differing.
#include "run/batch_sweep.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "compare/batch_sweep_report.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

class BatchSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-sweep-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // scale (x * w), [center (x - mean over the batch)], head (x * v).
  std::string save_model(bool center) {
    torch::jit::Module scale("Scale"), mid("Center"), head("Head");
    scale.register_parameter("w", torch::linspace(0.5, 2.0, 4), false);
    scale.define("def forward(self, x):\n    return x * self.w\n");
    mid.register_parameter("unused", torch::zeros({1}), false);
    mid.define(center ? "def forward(self, x):\n    return x - x.mean(0, keepdim=True)\n"
                      : "def forward(self, x):\n    return x + self.unused\n");
    head.register_parameter("v", torch::linspace(-1.0, 1.0, 4), false);
    head.define("def forward(self, x):\n    return x * self.v\n");
    torch::jit::Module seq("__torch__.torch.nn.modules.container.Sequential");
    seq.register_module("scale", scale);
    seq.register_module("center", mid);
    seq.register_module("head", head);
    seq.define("def forward(self, x):\n    return self.head.forward(self.center.forward(self.scale.forward(x)))\n");
    for (auto p : seq.parameters()) p.set_requires_grad(true);
    std::string path = (dir_ / (center ? "center.pt" : "plain.pt")).string();
    seq.save(path);
    return path;
  }

  SmokeConfig smoke(const std::string& model, int64_t batch) {
    nlohmann::json c = {{"schema", 1},
                        {"name", "sweep"},
                        {"seed", 3},
                        {"steps", 2},
                        {"data", {{"source", "synthetic"},
                                  {"sample_shape", {4}},
                                  {"batch_size", batch},
                                  {"synthetic", {{"kind", "tabular"}, {"rows", 64}}}}},
                        {"model", {{"name", "torchscript"}, {"path", model}, {"classes", 4}}},
                        {"optimizer", {{"name", "sgd"}, {"lr", 0.1}}}};
    std::string path = (dir_ / "sweep.json").string();
    write_file_atomically(path, pretty_dump(c));
    return load_smoke_config(path);
  }
  fs::path dir_;
};

TEST_F(BatchSweepTest, ABatchCouplingModuleIsNamedAtTheFirstPieceSize) {
  BatchSweep s = sweep_batch_invariance(smoke(save_model(true), 8));
  EXPECT_EQ(s.batch, 8);
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{8, 4, 2, 1}));
  ASSERT_EQ(s.modules.size(), 4u);  // scale, center, head, then the model's own output
  EXPECT_EQ(s.modules[0].module, "scale");
  EXPECT_EQ(s.modules[1].module, "center");
  EXPECT_EQ(s.modules[3].module, "(model output)");
  EXPECT_FALSE(s.invariant());
  EXPECT_EQ(s.modules[0].first_size_differing(), 0);  // elementwise: the same bits at every size
  ASSERT_EQ(s.modules[1].cells.size(), 3u);
  for (const auto& c : s.modules[1].cells) {
    EXPECT_EQ(c.samples_differ, 8) << c.size;  // every sample's centre moved
    EXPECT_GT(c.max_ulp, 0u);
    EXPECT_GT(c.max_abs, 0.0);
  }
  EXPECT_EQ(s.modules[1].first_size_differing(), 4);
  EXPECT_EQ(s.modules[1].first_size_originating(), 4);  // its input (scale's output) is the whole batch's
  EXPECT_EQ(s.modules[1].cells[0].samples_new, 8);
  EXPECT_TRUE(s.modules[1].per_sample);
  // head only carries the centring on: it differs, but none of it starts there.
  EXPECT_EQ(s.modules[2].first_size_differing(), 4);
  EXPECT_EQ(s.modules[2].first_size_originating(), 0);
  EXPECT_EQ(s.modules[2].cells[0].samples_new, 0);
  const std::string text = render_batch_sweep(s);
  EXPECT_NE(text.find("  scale ") , std::string::npos) << text;
  EXPECT_NE(text.find("batch-invariant\n"), std::string::npos) << text;
  EXPECT_NE(text.find("not batch-invariant: at 4: 8 of 8 samples differ, max "), std::string::npos) << text;
  EXPECT_NE(text.find(" differs only as its input does (an earlier module's difference, carried on): at 4: "
                      "8 of 8 samples differ"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sweep: NOT BATCH-INVARIANT (exit 1): center"), std::string::npos) << text;
  EXPECT_NE(text.find("is not batch-invariant on this stack at batch 4 (max "), std::string::npos) << text;
  nlohmann::json j = batch_sweep_json(s);
  EXPECT_EQ(j["invariant"], false);
  EXPECT_EQ(j["sizes"], nlohmann::json({8, 4, 2, 1}));
  EXPECT_EQ(j["modules"][1]["cells"][0]["samples_differ"], 8);
  EXPECT_EQ(j["modules"][0]["cells"][2]["max_ulp"], 0);
  EXPECT_EQ(j["modules"][1]["invariant"], false);
  EXPECT_EQ(j["modules"][1]["first_size_originating"], 4);
  EXPECT_EQ(j["modules"][2]["first_size_originating"], 0);
  EXPECT_FALSE(j["modules"][1]["cells"][0].contains("plain_seconds"));  // only when timed
}

TEST_F(BatchSweepTest, ElementwiseModulesAreBatchInvariantAtEverySize) {
  BatchSweep s = sweep_batch_invariance(smoke(save_model(false), 6));
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{6, 3, 1}));
  EXPECT_TRUE(s.invariant());
  for (const auto& m : s.modules) {
    EXPECT_EQ(m.first_size_differing(), 0) << m.module;
    EXPECT_EQ(m.cells.size(), 2u);
  }
  const std::string text = render_batch_sweep(s);
  EXPECT_NE(text.find("the first batch, 6 samples, forwarded whole and in pieces of 3, 1"), std::string::npos) << text;
  EXPECT_NE(text.find("sweep: BATCH-INVARIANT on this stack (exit 0)\n"), std::string::npos) << text;
}

TEST_F(BatchSweepTest, ABatchOfOneSampleHasNothingToSplit) {
  try {
    sweep_batch_invariance(smoke(save_model(false), 1));
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("the first batch holds 1 sample: nothing to split (data.batch_size 2 or more)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace lockstep

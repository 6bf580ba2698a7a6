// End-to-end tests of the data pipeline and the data-only pass:
// the classic worker-seeding bug, resize interpolation, uint8 -> float
// written two ways, directory order, worker counts and bad image data, on
// scikit-image's photos (ci/fetch-data.sh) and the digits CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "cli/cli_helpers.h"

namespace lockstep {
namespace {
using namespace cli_test;

const std::string kPhotos = kSourceDir + "/smoke/photos-cnn.json";

// Probes `smoke` into <project>/<name>.json; returns the CLI result.
Result probe(const fs::path& project, const std::string& smoke, const std::string& name,
             const std::string& extra = "") {
  return lockstep("probe " + smoke + " --record " + (project / (name + ".json")).string() + " " + extra);
}

std::string smoke_of(const fs::path& project) {
  for (auto& e : fs::directory_iterator(project / "smoke")) return e.path().string();
  return "";
}

using Edit = std::function<void(nlohmann::json&)>;

// Probes a reference and a changed copy of `smoke`, each in its own scratch
// project, and compares the changed one against the reference.
struct Variants {
  fs::path reference, changed;
  Result compare;
};
Variants probe_and_compare(const std::string& name, const std::string& smoke, const Edit& reference,
                           const Edit& changed) {
  Variants v{scratch(name + "-ref", reference, smoke), scratch(name + "-changed", changed, smoke), {}};
  for (const fs::path& p : {v.reference, v.changed}) {
    Result r = probe(p, smoke_of(p), "p");
    EXPECT_EQ(r.code, 0) << r.output;
  }
  v.compare = lockstep("compare " + (v.changed / "p.json").string() + " " + (v.reference / "p.json").string());
  return v;
}

TEST(DataCli, WorkerSeededAugmentationIsCaughtAtTheFirstDifferingBatch) {
  Result cmp = probe_and_compare("seeding", kSmoke, {}, [](nlohmann::json& c) {
                 c["inject_nondeterminism"] = "worker_seeded_augment";
               }).compare;
  EXPECT_EQ(cmp.code, 1) << cmp.output;
  // The config is an input of the run: named first, then where the values moved.
  EXPECT_NE(cmp.output.find("first divergence: input changed: smoke config digits-cnn"), std::string::npos)
      << cmp.output;
  EXPECT_NE(cmp.output.find("; the values first moved at data batch 0: probes."), std::string::npos) << cmp.output;
}

// Sets data.image.<key> and drops augmentation, so the two variants differ
// only in that key.
Edit image_option(const std::string& key, const std::string& value) {
  return [key, value](nlohmann::json& c) {
    c["data"]["image"][key] = value;
    c["data"].erase("augment");
  };
}

TEST(DataCli, NearestInsteadOfLinearResizeFailsAtBatch0WithTheStdMoving) {
  Result cmp = probe_and_compare("resize", kPhotos, image_option("interpolation", "linear"),
                                 image_option("interpolation", "nearest")).compare;
  EXPECT_EQ(cmp.code, 1) << cmp.output;
  EXPECT_NE(cmp.output.find("the values first moved at data batch 0: "), std::string::npos) << cmp.output;
  EXPECT_NE(cmp.output.find("probes.inputs.std"), std::string::npos) << cmp.output;
  EXPECT_EQ(cmp.output.find("bit-level only"), std::string::npos) << cmp.output;
}

TEST(DataCli, DivideVersusMultiplyBy255IsABitLevelOnlyChange) {
  Variants v = probe_and_compare("tofloat", kPhotos, image_option("to_float", "div"), image_option("to_float", "mul"));
  nlohmann::json a = parse_json_file((v.reference / "p.json").string());
  nlohmann::json b = parse_json_file((v.changed / "p.json").string());
  EXPECT_NE(a["probes"][0]["inputs"]["xxh3_128"], b["probes"][0]["inputs"]["xxh3_128"]);
  for (const char* stat : {"sum", "mean", "std", "min", "max"}) {
    double x = a["probes"][0]["inputs"][stat], y = b["probes"][0]["inputs"][stat];
    EXPECT_LE(std::abs(x - y), 1e-7 * std::abs(y)) << stat;
  }
  EXPECT_EQ(v.compare.code, 1) << v.compare.output;
  EXPECT_NE(v.compare.output.find("bit-level only"), std::string::npos) << v.compare.output;
}

// The same photos copied in reverse order (class folders too) give the
// same probes and manifest: listing is byte-wise sorted, not directory order.
TEST(DataCli, FolderCreatedInAnotherOrderGivesTheSameProbes) {
  fs::path src = fs::path(data_dir()) / "photos";
  fs::path root = fs::temp_directory_path() / ("lockstep-order-" + std::to_string(::getpid()));
  fs::remove_all(root);
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(src))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), src));
  std::sort(files.begin(), files.end());
  for (const char* order : {"sorted", "reversed"}) {
    if (std::string(order) == "reversed") std::reverse(files.begin(), files.end());
    for (const auto& f : files) {
      fs::create_directories(root / order / f.parent_path());
      fs::copy_file(src / f, root / order / f);
    }
  }
  nlohmann::json probes[2], manifest[2];
  int i = 0;
  for (const char* order : {"sorted", "reversed"}) {
    fs::path p = scratch(std::string("order-") + order, [&](nlohmann::json& c) {
      c["data"]["path"] = (root / order).string();
    }, kPhotos);
    Result r = probe(p, smoke_of(p), "p");
    ASSERT_EQ(r.code, 0) << r.output;
    nlohmann::json rec = parse_json_file((p / "p.json").string());
    probes[i] = rec["probes"];
    manifest[i++] = rec["fingerprint"]["data.file_xxh3"];
  }
  EXPECT_EQ(probes[0], probes[1]);
  EXPECT_EQ(manifest[0], manifest[1]);
  EXPECT_EQ(probes[0].size(), 12u);  // 12 photos / batch 4, 4 probe epochs
}

TEST(DataCli, ImageBatchesAreIdenticalForAnyWorkerCount) {
  fs::path p = scratch("photo-workers", {}, kPhotos);
  nlohmann::json reference;
  for (int workers : {0, 1, 2, 4}) {
    Result r = probe(p, smoke_of(p), "w" + std::to_string(workers), "--workers " + std::to_string(workers));
    ASSERT_EQ(r.code, 0) << r.output;
    nlohmann::json probes = parse_json_file((p / ("w" + std::to_string(workers) + ".json")).string())["probes"];
    if (workers == 0) reference = probes;
    else EXPECT_EQ(probes, reference) << workers << " workers";
  }
  nlohmann::json rec = parse_json_file((p / "w0.json").string());
  EXPECT_EQ(rec["fingerprint"]["libs.opencv"]["value"], LOCKSTEP_TEST_OPENCV_VERSION);  // 4.6.0 on Debian 12
  EXPECT_EQ(rec["fingerprint"]["data.rows"]["value"], "12");
}

// Some sample photos carry an sRGB profile libpng warns about on stderr:
// the decoder's lines stay off the terminal (of run and check), counted
// in one note of the run.
TEST(DataCli, TheDecodersWarningsStayOffTheTerminal) {
  fs::path p = scratch("photo-chatter", [](nlohmann::json& c) { c.erase("resume_at"); }, kPhotos);
  Result run = lockstep("run " + smoke_of(p) + " --record " + (p / "r.json").string());
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("note: {data}/photos: the image decoder wrote "), std::string::npos) << run.output;
  // libpng 1.6.39 (Debian 12): "iCCP: known incorrect sRGB profile"; 1.6.48
  // (Debian 13): "iCCP: profile 'ICC Profile': 1000000h: invalid rendering intent".
  EXPECT_NE(run.output.find(" warning line(s), not shown: libpng warning: iCCP: "),
            std::string::npos) << run.output;
  // No line of the decoder's own: only the note quotes it.
  EXPECT_EQ(run.output.find("\nlibpng warning"), std::string::npos) << run.output;
  EXPECT_NE(run.output.rfind("libpng warning", 0), 0u) << run.output;
  Result check = lockstep("bless " + (p / "smoke").string() + " --reason chatter --out " + (p / "out").string());
  ASSERT_EQ(check.code, 0) << check.output;
  EXPECT_EQ(check.output.find("libpng"), std::string::npos) << check.output;
}

// Bytes that are not UTF-8 in a path never end in an internal error: a
// skipped file so named in an image class folder, a config under a folder
// named with byte 0xff, and `check --out` such a folder all work, the
// bytes written as "\xNN" in records and reports.
TEST(DataCli, PathsThatAreNotUtf8AreWrittenEscaped) {
  fs::path p = scratch("non-utf8", [](nlohmann::json& c) { c.erase("resume_at"); }, kPhotos);
  fs::path photos = p / "photos";
  fs::copy(fs::path(data_dir()) / "photos", photos, fs::copy_options::recursive);
  std::string cls = fs::directory_iterator(photos)->path().filename().string();
  write_file_atomically((photos / cls / "notes\xe9.txt").string(), "not an image");
  nlohmann::json cfg = parse_json_file(smoke_of(p));
  cfg["data"]["path"] = "../photos";
  write_file_atomically(smoke_of(p), pretty_dump(cfg));
  Result r = lockstep("run " + smoke_of(p) + " --record " + (p / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(parse_json_file((p / "r.json").string())["fingerprint"]["data.skipped_files"]["value"],
            "1 file(s) not loaded: " + cls + "/notes\\xe9.txt (not an image name (.png .jpg .jpeg .tif .tiff .bmp))");

  fs::path odd = p / "team\xff";
  fs::create_directories(odd);
  fs::copy(p / "smoke", odd / "smoke", fs::copy_options::recursive);
  fs::copy(photos, odd / "photos", fs::copy_options::recursive);
  Result b = lockstep("bless smoke --reason odd --out out", "", odd.string());
  EXPECT_EQ(b.code, 0) << b.output;
  std::string out = (p / "out\xff").string();
  Result c = lockstep("check " + (odd / "smoke").string() + " --out '" + out + "'");
  EXPECT_EQ(c.code, 0) << c.output;
  EXPECT_EQ(c.output.find("internal error"), std::string::npos) << c.output;
  nlohmann::json report = parse_json_file(out + "/photos-cnn/report.json");
  EXPECT_NE(report["golden"].get<std::string>().find("team\\xff"), std::string::npos) << report.dump();
  EXPECT_EQ(lockstep("verify-goldens " + (odd / "goldens").string()).code, 0);
}

TEST(DataCli, BadImageDataIsExit2NamingTheFile) {
  fs::path bad = fs::path(data_dir()) / "photos-bad";
  fs::path t = scratch("truncated", [&](nlohmann::json& c) { c["data"]["path"] = bad.string(); }, kPhotos);
  Result r = probe(t, smoke_of(t), "p");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("truncated.jpg: (image): expected a complete JPEG ending with the EOI marker"),
            std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t / "p.json"));

  fs::path m = scratch("missing", [](nlohmann::json& c) { c["data"]["path"] = "/nonexistent/photos"; }, kPhotos);
  Result missing = probe(m, smoke_of(m), "p");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent/photos"), std::string::npos) << missing.output;

  fs::path empty_root = m / "empty";
  fs::create_directories(empty_root / "a");
  std::ofstream(empty_root / "a" / "notes.txt") << "not an image";
  fs::path e = scratch("empty", [&](nlohmann::json& c) { c["data"]["path"] = empty_root.string(); }, kPhotos);
  Result empty = probe(e, smoke_of(e), "p");
  EXPECT_EQ(empty.code, 2) << empty.output;
  EXPECT_NE(empty.output.find("expected at least one image"), std::string::npos) << empty.output;

  // A class folder with no image would still take a label: refused, as
  // torchvision's ImageFolder does.
  fs::path one_empty = m / "one-empty";
  fs::copy(fs::path(data_dir()) / "photos", one_empty, fs::copy_options::recursive);  // color/, gray/
  fs::create_directories(one_empty / "zz-empty");
  fs::path oe = scratch("one-empty", [&](nlohmann::json& c) { c["data"]["path"] = one_empty.string(); }, kPhotos);
  Result empty_class = probe(oe, smoke_of(oe), "p");
  EXPECT_EQ(empty_class.code, 2) << empty_class.output;
  EXPECT_NE(empty_class.output.find((one_empty / "zz-empty").string() +
                                    ": (class folder): expected at least one image"),
            std::string::npos) << empty_class.output;

  // batch_size above the sample count with drop_last: no batch at all.
  fs::path big = scratch("batch-too-big", [](nlohmann::json& c) {
    c["data"]["batch_size"] = 13;
    c["data"]["drop_last"] = true;
  }, kPhotos);
  Result too_big = probe(big, smoke_of(big), "p");
  EXPECT_EQ(too_big.code, 2) << too_big.output;
  EXPECT_NE(too_big.output.find("photos-cnn.json: data.batch_size: expected at most the dataset's 12 samples"),
            std::string::npos) << too_big.output;

  fs::path i = scratch("no-interp", [](nlohmann::json& c) { c["data"]["image"].erase("interpolation"); }, kPhotos);
  Result no_interp = probe(i, smoke_of(i), "p");
  EXPECT_EQ(no_interp.code, 2) << no_interp.output;
  EXPECT_NE(no_interp.output.find("data.image.interpolation: expected a value"), std::string::npos) << no_interp.output;
}

// Inputs are not the stack: one CSV value edited by a rounding-level amount
// on an unchanged stack fails as a changed input, first line naming the
// file, instead of passing in the cross-stack lane.
TEST(DataCli, OneEditedCsvValueFailsAsAChangedInput) {
  const std::string wine = kSourceDir + "/smoke/wine-mlp.json";
  fs::path p = scratch("input-edit", [](nlohmann::json& c) { c.erase("resume_at"); }, wine);
  std::string smoke = (p / "smoke" / "wine-mlp.json").string();
  Result bless = lockstep("bless " + smoke + " --reason input --out " + (p / "out").string());
  ASSERT_EQ(bless.code, 0) << bless.output;

  fs::path edited = p / "data";
  fs::create_directories(edited);
  std::string csv = read_file(data_dir() + "/wine_data.csv");
  size_t at = csv.find("14.23,");
  ASSERT_NE(at, std::string::npos);
  csv.replace(at, 6, "14.2300001,");
  write_file_atomically((edited / "wine_data.csv").string(), csv);

  Result r = lockstep("check " + smoke + " --out " + (p / "out-edited").string(),
                      "LOCKSTEP_DATA_DIR=" + edited.string());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("first divergence: input changed: data file {data}/wine_data.csv, xxh3 "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("lane: same-stack"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[input] data.file_xxh3: input changed: data file {data}/wine_data.csv"), std::string::npos)
      << r.output;

  // The original data still passes bit for bit.
  Result same = lockstep("check " + smoke + " --out " + (p / "out-same").string());
  EXPECT_EQ(same.code, 0) << same.output;
}

}  // namespace
}  // namespace lockstep

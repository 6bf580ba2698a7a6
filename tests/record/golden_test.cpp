#include "record/golden.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../record_builder.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_io.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("lockstep-golden-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

Golden sample() {
  Golden g;
  g.record = testing::make_record({2.5, 2.25, 2.0});
  g.record.probes.push_back(testing::make_probe(0, 0.5));
  g.provenance.reason = "initial";
  g.provenance.created_utc = "2026-11-29T09:00:00Z";
  g.provenance.git_commit = "0123456789abcdef0123456789abcdef01234567";
  g.provenance.git_author = "A <a@b>";
  g.provenance.tool_version = "0.1.0";
  g.provenance.runs = 2;
  return g;
}

TEST(Golden, RoundTripsWithContentHash) {
  std::string path = temp_path("rt.json");
  std::string hash = write_golden(path, sample());
  Golden back = read_golden(path);
  EXPECT_EQ(back.content_hash, hash);
  EXPECT_EQ(back.record.series.at("loss").values, sample().record.series.at("loss").values);
  EXPECT_EQ(back.provenance.reason, "initial");
  EXPECT_EQ(back.record.probes.size(), 1u);
}

// The config's fields round-trip; a record without them writes no
// "config" (goldens made before it keep their content hash).
TEST(Golden, ConfigFieldsRoundTripAndAreOptional) {
  Golden g = sample();
  std::string plain = temp_path("no-config.json");
  write_golden(plain, g);
  EXPECT_FALSE(parse_json_file(plain).contains("config"));
  g.record.config = {{"optimizer.lr", "0.01"}, {"data.sample_shape", "[1,8,8]"}};
  std::string path = temp_path("config.json");
  write_golden(path, g);
  EXPECT_EQ(read_golden(path).record.config, g.record.config);
  nlohmann::json doc = parse_json_file(path);
  doc["config"]["seed"] = 7;
  write_file_atomically(path, pretty_dump(doc));
  try {
    read_golden_or_record(path);
    FAIL() << "a number where a JSON text is expected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("config.seed: expected a string"), std::string::npos) << e.what();
  }
}

// A stack label round-trips; a record without one writes no "stack" (goldens
// made before labels keep their content hash); one that could not name a
// file is exit 2 naming the field.
TEST(Golden, StackLabelRoundTripsAndIsOptional) {
  Golden g = sample();
  std::string plain = temp_path("no-stack.json");
  write_golden(plain, g);
  EXPECT_FALSE(parse_json_file(plain).contains("stack"));
  EXPECT_EQ(read_golden(plain).record.stack, "");
  g.record.stack = "torch2";
  std::string path = temp_path("stack.json");
  write_golden(path, g);
  EXPECT_EQ(read_golden(path).record.stack, "torch2");
  nlohmann::json doc = parse_json_file(path);
  doc["stack"] = "../x";
  write_file_atomically(path, pretty_dump(doc));
  try {
    read_golden_or_record(path);
    FAIL() << "a stack label with a path in it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("stack: expected a stack label (1..40 letters, digits, '.', '_' and '-', "
                                         "starting with a letter or digit), got \"../x\""),
              std::string::npos)
        << e.what();
  }
}

TEST(Golden, SeedsInitAndResourcesRoundTrip) {
  Golden g = sample();
  g.provenance.seeds = {42, 1, 2};  // the record's seed first
  for (auto& [name, series] : g.record.series) {
    series.mean.assign(series.values.size(), 1.5);
    series.std.assign(series.values.size(), 0.25);
  }
  g.record.init["fc.weight"] = {0.015625, 0.25, std::string(32, 'e')};
  g.record.resources.step_time_s = {0.5, 0.25, 0.125};  // one per step
  g.record.resources.peak_rss_bytes = 123456789;
  std::string path = temp_path("seeds.json");
  write_golden(path, g);
  Golden back = read_golden(path);
  EXPECT_EQ(back.provenance.seeds, g.provenance.seeds);
  EXPECT_EQ(back.record.init.at("fc.weight").mean, 0.015625);
  EXPECT_EQ(back.record.init.at("fc.weight").xxh3_128, std::string(32, 'e'));
  EXPECT_EQ(back.record.resources.step_time_s, g.record.resources.step_time_s);
  EXPECT_EQ(back.record.resources.peak_rss_bytes, 123456789);
  EXPECT_EQ(back.record.resources.peak_cuda_bytes, -1);

  // A single-seed golden writes no "seeds" (older goldens keep their hash);
  // one seed is not a multi-seed golden.
  EXPECT_FALSE(golden_body_json(sample())["provenance"].contains("seeds"));
  Golden bad = g;
  bad.provenance.seeds = {1, 42};  // the config seed must come first
  write_golden(path, bad);
  EXPECT_THROW(read_golden(path), Error);
  bad = g;
  bad.provenance.seeds.clear();  // mean/std without seeds
  write_golden(path, bad);
  EXPECT_THROW(read_golden(path), Error);
  g.provenance.seeds = {7};
  write_golden(path, g);
  try {
    read_golden(path);
    FAIL() << "one seed accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("provenance.seeds: expected two or more seeds"), std::string::npos) << e.what();
  }
}

TEST(Golden, HandEditIsRejected) {
  std::string path = temp_path("edited.json");
  write_golden(path, sample());
  std::string text = read_file(path);
  auto pos = text.find("\"initial\"");
  text.replace(pos, 9, "\"edited!\"");
  write_file_atomically(path, text);
  try {
    read_golden(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path + ": content_hash: expected the hash of the golden's content"),
              std::string::npos)
        << e.what();
  }
}

TEST(Golden, TruncatedFileIsExit2NamingTheFile) {
  std::string path = temp_path("trunc.json");
  write_golden(path, sample());
  std::string text = read_file(path);
  write_file_atomically(path, text.substr(0, text.size() / 2));
  try {
    read_golden(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": line ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected complete JSON (file is truncated or empty)"), std::string::npos)
        << e.what();
  }
}

TEST(Golden, UnknownKeyAndSchemaAreRejected) {
  std::string path = temp_path("schema.json");
  nlohmann::json j = golden_body_json(sample());
  j["schema"] = "lockstep.run/99";
  j["content_hash"] = golden_content_hash(j);
  write_file_atomically(path, j.dump());
  EXPECT_THROW(read_golden(path), Error);

  RunRecord r = testing::make_record({1.0});
  nlohmann::json rj = to_json(r);
  rj["serise"] = nlohmann::json::object();
  write_file_atomically(path, rj.dump());
  try {
    read_run_record(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": serise: expected a known field, not 'serise' (did you mean 'series'?)");
  }
}

TEST(Golden, EmptyGoldenIsExit2) {
  std::string path = temp_path("empty.json");
  Golden g = sample();
  g.record.series.clear();
  g.record.probes.clear();
  g.record.hashes.clear();
  write_golden(path, g);
  EXPECT_THROW(read_golden(path), Error);
}

// The content hash is unkeyed (anyone can recompute it after an edit): a
// golden whose parts contradict each other is exit 2 naming the field,
// whatever its hash says.
TEST(Golden, AGoldenWhosePartsContradictIsExit2NamingTheField) {
  auto refusal = [](Golden g) {
    std::string path = temp_path("inconsistent.json");
    write_golden(path, g);  // a valid, recomputed hash
    try {
      read_golden(path);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return std::string(e.what()).substr(path.size());
    }
    return std::string("(read)");
  };
  Golden g = sample();
  g.record.fingerprint["device"] = {"cpu", true};
  g.record.contract["deterministic_algorithms"] = "true";
  g.record.fingerprint["determinism.deterministic_algorithms"] = {"true", true};
  EXPECT_EQ(refusal(g), "(read)");

  Golden cuda = g;
  cuda.record.device = "cuda";
  EXPECT_EQ(refusal(cuda), ": device: expected \"cpu\", the device of its platform key cpu-x86_64-avx2, got \"cuda\"");
  Golden empty = g;
  empty.record.fingerprint.clear();
  EXPECT_EQ(refusal(empty), ": fingerprint: expected the stack the golden was made on (it is empty: with no stack "
                            "to compare, every run would land in the same-stack lane)");
  Golden device = g;
  device.record.fingerprint["device"].value = "cuda";
  EXPECT_EQ(refusal(device), ": fingerprint.device: expected {\"value\": \"cpu\"}, the record's device, got \"cuda\"");
  Golden contract = g;
  contract.record.contract["deterministic_algorithms"] = "false";
  EXPECT_EQ(refusal(contract), ": fingerprint.determinism.deterministic_algorithms: expected {\"value\": \"false\"}, "
                               "the contract's deterministic_algorithms, got \"true\"");
  Golden no_series = g;
  no_series.record.series.clear();
  EXPECT_EQ(refusal(no_series), ": series: expected at least one series (a golden of 3 training steps pins its "
                                "loss, at least), got none");
  // An imported golden claims no stack: an empty-but-for-its-source
  // fingerprint is what it is.
  Golden imported = g;
  imported.record.fingerprint = {{"import.source", {"megatron x.json", false}}};
  imported.record.contract.clear();
  imported.provenance.action = "import";
  imported.provenance.imported_from = "megatron x.json";
  imported.provenance.runs = 0;
  EXPECT_EQ(refusal(imported), "(read)");
  // Imported is said by the fingerprint and imported_from: a blessed
  // golden given an import.source (its inputs would go unchecked), or an
  // imported one without it, is refused.
  Golden forged = g;
  forged.provenance.action = "bless";
  forged.record.fingerprint["import.source"] = {"tensorboard events", false};
  EXPECT_EQ(refusal(forged), ": fingerprint.import.source: expected no import.source in a golden lockstep made "
                             "(provenance.action \"bless\", no imported_from): only `lockstep import` writes it");
  Golden no_source = imported;
  no_source.record.fingerprint = {{"cpu.arch", {"x86_64", false}}};
  EXPECT_EQ(refusal(no_source), ": provenance.imported_from: expected a fingerprint saying where the curves came "
                                "from (import.source), as `lockstep import` writes it");
  // The platform key its file is named by is the one its fingerprint makes.
  Golden keyed = g;
  keyed.record.fingerprint["cpu.arch"] = {"x86_64", true};
  keyed.record.fingerprint["cpu.capability"] = {"AVX2", true};
  EXPECT_EQ(refusal(keyed), "(read)");
  keyed.record.fingerprint["cpu.capability"].value = "AVX512";
  EXPECT_EQ(refusal(keyed), ": platform: expected \"cpu-x86_64-avx512\", the key its fingerprint makes (device, "
                            "cpu.arch, cpu.capability, cuda.compute_capability), got \"cpu-x86_64-avx2\"");

  // Every part in the form lockstep writes it: a final hash is an XXH3-128,
  // a series has a name, the provenance reads as bless, accept, check or
  // import wrote it.
  Golden hashes = g;
  hashes.record.hashes["params"] = "not a hash at all";
  EXPECT_EQ(refusal(hashes), ": hashes.params: expected an XXH3-128 digest (32 lowercase hex digits), got \"not a "
                             "hash at all\"");
  Golden unnamed = g;
  unnamed.record.series[""] = unnamed.record.series.at("loss");
  EXPECT_EQ(refusal(unnamed), ": series.: expected a series name (1 to 200 printable characters, no spaces or quotes)");
  Golden reason = g;
  reason.provenance.reason = " \n";
  EXPECT_EQ(refusal(reason), ": provenance.reason: expected why the golden was made (bless and accept require --reason)");
  reason.provenance.reason = "\xc2\xa0\xe3\x80\x80\xe2\x80\x8b";  // NO-BREAK SPACE, IDEOGRAPHIC SPACE, ZERO WIDTH SPACE
  EXPECT_EQ(refusal(reason), ": provenance.reason: expected why the golden was made (bless and accept require --reason)");
  Golden when = g;
  when.provenance.created_utc = "2026-12-03T12:00:60Z";  // a leap second ends a day, never noon
  EXPECT_EQ(refusal(when), ": provenance.created_utc: expected an ISO 8601 UTC time such as 2026-12-03T02:00:00Z, got "
                           "\"2026-12-03T12:00:60Z\"");
  when.provenance.created_utc = "2016-12-31T23:59:60Z";
  EXPECT_EQ(refusal(when), "(read)");
  when.provenance.created_utc = "yesterday";
  EXPECT_EQ(refusal(when), ": provenance.created_utc: expected an ISO 8601 UTC time such as 2026-12-03T02:00:00Z, got "
                           "\"yesterday\"");
  Golden commit = g;
  commit.provenance.git_commit = "xyz";
  EXPECT_EQ(refusal(commit), ": provenance.git_commit: expected a commit id (40 or 64 lowercase hex digits), \"(no "
                             "commits)\" or \"(absent: ...)\", got \"xyz\"");
  Golden no_runs = g;
  no_runs.provenance.runs = 0;
  EXPECT_EQ(refusal(no_runs), ": provenance.runs: expected the runs the golden was made from, 1 or more (0 only for an "
                              "imported golden)");
}

}  // namespace
}  // namespace lockstep

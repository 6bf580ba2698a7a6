// trainer.inputs: the files a trainer's globs name, hashed into the
// fingerprint, and every way a pattern can fail to name data files.
#include "external/trainer_inputs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// A command's or an input's path as the trainer opens it: placeholders
// replaced, then under trainer.cwd unless absolute.
TEST(TrainerPath, PlaceholdersAreReplacedAndARelativePathIsUnderTheTrainersFolder) {
  EXPECT_EQ(trainer_path("{data}/digits.csv.gz", "/repo", "/cache/data", "/repo/smoke"), "/cache/data/digits.csv.gz");
  EXPECT_EQ(trainer_path("train.py", "/repo", "/cache/data", "/repo/smoke"), "/repo/train.py");
  EXPECT_EQ(trainer_path("{config_dir}/../train.py", "/repo", "/d", "/repo/smoke"), "/repo/smoke/../train.py");
  EXPECT_EQ(trainer_path("/opt/train.py", "/repo", "/d", "/c"), "/opt/train.py");
  EXPECT_EQ(trainer_path("data/*.bin", "/repo", "/d", "/c"), "/repo/data/*.bin");
}

class TrainerInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep-trainer-inputs-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    write_file_atomically((dir_ / "data" / "train.bin").string(), "0123456789");
    write_file_atomically((dir_ / "data" / "val.bin").string(), "abc");
    write_file_atomically((dir_ / "data" / "meta" / "vocab.json").string(), "{}");
    write_file_atomically((dir_ / "tokenizer.json").string(), "[]");
    ::setenv("LOCKSTEP_HASH_CACHE", "0", 1);
    c_.file = (dir_ / "smoke" / "nanogpt.json").string();
    c_.trainer.resolved_cwd = dir_.string();
  }
  void TearDown() override {
    ::unsetenv("LOCKSTEP_HASH_CACHE");
    fs::remove_all(dir_);
  }
  std::string refusal() {
    try {
      trainer_input_files(c_);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }
  fs::path dir_;
  SmokeConfig c_;
};

TEST_F(TrainerInputsTest, GlobsAndFoldersNameEachFileOnceSortedRelativeToTheTrainersFolder) {
  c_.trainer.inputs = {"data/*.bin", "data", "*.json"};
  auto files = trainer_input_files(c_);
  std::vector<std::string> rel;
  for (const auto& [r, abs] : files) rel.push_back(r);
  EXPECT_EQ(rel, (std::vector<std::string>{"data/meta/vocab.json", "data/train.bin", "data/val.bin", "tokenizer.json"}));
  EXPECT_EQ(files[1].second, (dir_ / "data" / "train.bin").string());
  // Placeholders as in the command; a file under one is named through it
  // (the data cache's folder differs between machines), one under neither
  // nor trainer.cwd by its absolute path.
  write_file_atomically((dir_ / "smoke" / "extra.txt").string(), "x");
  write_file_atomically((dir_ / "cache" / "digits.csv.gz").string(), "y");
  write_file_atomically((dir_ / "elsewhere.txt").string(), "z");
  ::setenv("LOCKSTEP_DATA_DIR", (dir_ / "cache").c_str(), 1);
  c_.trainer.resolved_cwd = (dir_ / "data").string();
  c_.trainer.inputs = {"{config_dir}/extra.txt", "{config_dir}/../data/val.bin", "{data}/*.gz",
                       (dir_ / "elsewhere.txt").string()};
  files = trainer_input_files(c_);
  ::unsetenv("LOCKSTEP_DATA_DIR");
  std::vector<std::string> names;
  for (const auto& [name, abs] : files) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{(dir_ / "elsewhere.txt").string(), "val.bin", "{config_dir}/extra.txt",
                                             "{data}/digits.csv.gz"}));
}

TEST_F(TrainerInputsTest, EachFileIsNamedInTheFingerprintAndTheirSumIsAnInput) {
  c_.trainer.inputs = {"data/*.bin"};
  Fingerprint before;
  add_trainer_inputs(c_, before);
  ASSERT_EQ(before.size(), 3u);
  EXPECT_TRUE(before.at("trainer.inputs_xxh3").input);
  EXPECT_FALSE(before.at("trainer.inputs_xxh3").relevant);
  EXPECT_FALSE(before.at("trainer.input.data/train.bin").input);
  EXPECT_EQ(before.at("trainer.input.data/train.bin").value.size(), 32u);
  // One byte of train.bin changed: its field and the sum move, val.bin's stays.
  write_file_atomically((dir_ / "data" / "train.bin").string(), "0123456780");
  Fingerprint after;
  add_trainer_inputs(c_, after);
  EXPECT_NE(after.at("trainer.inputs_xxh3").value, before.at("trainer.inputs_xxh3").value);
  EXPECT_NE(after.at("trainer.input.data/train.bin").value, before.at("trainer.input.data/train.bin").value);
  EXPECT_EQ(after.at("trainer.input.data/val.bin").value, before.at("trainer.input.data/val.bin").value);
  // A smoke without trainer.inputs adds nothing.
  c_.trainer.inputs.clear();
  Fingerprint none;
  add_trainer_inputs(c_, none);
  EXPECT_TRUE(none.empty());
}

TEST_F(TrainerInputsTest, APatternThatMatchesNothingIsBadInputNamingTheFieldAndFolder) {
  c_.trainer.inputs = {"data/*.bin", "data/shakespeare/*.bin"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[1]: expected a pattern that matches at least one file in " +
                           dir_.string() + " (trainer.cwd), got \"data/shakespeare/*.bin\", which matches none");
  // A pattern naming {data} is said expanded, with where the data cache is.
  ::setenv("LOCKSTEP_DATA_DIR", (dir_ / "cache").c_str(), 1);
  c_.trainer.inputs = {"{data}/digits.csv.gz"};
  std::string why = refusal();
  ::unsetenv("LOCKSTEP_DATA_DIR");
  EXPECT_EQ(why, c_.file + ": trainer.inputs[0]: expected a pattern that matches at least one file, got "
                           "\"{data}/digits.csv.gz\", that is " + (dir_ / "cache" / "digits.csv.gz").string() +
                           ", which matches none ({data} is the data cache, $LOCKSTEP_DATA_DIR or "
                           "~/.cache/lockstep/data: is the dataset there?)");
}

// A folder with no file in it (a dataset not fetched yet) names nothing;
// a link to a folder inside an input folder is refused, not skipped.
TEST_F(TrainerInputsTest, AnEmptyFolderOrAFolderLinkInsideOneIsRefused) {
  fs::create_directories(dir_ / "empty" / "sub");
  c_.trainer.inputs = {"empty"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected a pattern that names at least one file, got "
                                 "\"empty\", which names only empty folders (a dataset not fetched yet?)");
  fs::create_directory_symlink(dir_ / "data" / "meta", dir_ / "empty" / "meta-link");
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected regular files under " + (dir_ / "empty").string() +
                           ", got " + (dir_ / "empty" / "meta-link").string() +
                           ", a link to a folder (name its target in trainer.inputs instead)");
}

// A folder named "{data}" in trainer.cwd would give its files the names of
// the data cache's: two files under one name, one of them never hashed.
TEST_F(TrainerInputsTest, TwoFilesThatWouldTakeOneNameAreRefused) {
  write_file_atomically((dir_ / "cache" / "digits.csv.gz").string(), "y");
  write_file_atomically((dir_ / "data" / "{data}" / "digits.csv.gz").string(), "z");
  ::setenv("LOCKSTEP_DATA_DIR", (dir_ / "cache").c_str(), 1);
  c_.trainer.resolved_cwd = (dir_ / "data").string();
  c_.trainer.inputs = {"{data}/*.gz", "."};
  std::string why = refusal();
  ::unsetenv("LOCKSTEP_DATA_DIR");
  EXPECT_EQ(why, c_.file + ": trainer.inputs[1]: expected input files with names of their own, got two named "
                           "\"{data}/digits.csv.gz\": " + (dir_ / "cache" / "digits.csv.gz").string() + " and " +
                           (dir_ / "data" / "{data}" / "digits.csv.gz").string() + " (rename the folder in trainer.cwd)");
}

TEST_F(TrainerInputsTest, ADanglingLinkOrAFifoIsNoDataFile) {
  fs::create_symlink(dir_ / "lfs-object-never-fetched", dir_ / "data" / "big.bin");
  c_.trainer.inputs = {"data/big.bin"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected regular files or folders, got " +
                           (dir_ / "data" / "big.bin").string() +
                           ": a dangling link (an unfetched Git LFS or git-annex file?)");
  fs::remove(dir_ / "data" / "big.bin");
  fs::create_symlink(dir_ / "data" / "b.bin", dir_ / "data" / "a.bin");
  fs::create_symlink(dir_ / "data" / "a.bin", dir_ / "data" / "b.bin");
  c_.trainer.inputs = {"data/a.bin"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected regular files or folders, got " +
                           (dir_ / "data" / "a.bin").string() + ": a loop of links (each names another, none a file)");
  fs::remove(dir_ / "data" / "a.bin");
  fs::remove(dir_ / "data" / "b.bin");
  ASSERT_EQ(::mkfifo((dir_ / "data" / "meta" / "pipe").c_str(), 0600), 0);
  c_.trainer.inputs = {"data/meta"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected regular files under " + (dir_ / "data" / "meta").string() +
                           ", got " + (dir_ / "data" / "meta" / "pipe").string() +
                           " (a dangling link, FIFO, socket or device)");
}

// "link/../x" is the file the trainer opens: ".." after a link climbs out
// of the link's target (as the kernel resolves it), not out of the folder
// holding the link; a file of the same name there is not the one hashed.
TEST_F(TrainerInputsTest, APathThroughALinkAndDotDotNamesTheFileTheKernelOpens) {
  fs::create_directory_symlink(dir_ / "data" / "meta", dir_ / "lnk");
  write_file_atomically((dir_ / "val.bin").string(), "not the trainer's");
  c_.trainer.inputs = {"lnk/../val.bin", "lnk/../*.bin"};
  auto files = trainer_input_files(c_);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], std::make_pair(std::string("data/train.bin"), (dir_ / "data" / "train.bin").string()));
  EXPECT_EQ(files[1], std::make_pair(std::string("data/val.bin"), (dir_ / "data" / "val.bin").string()));
  // A trainer folder reached through a link names its files the same way.
  fs::create_directory_symlink(dir_, dir_.string() + "-link");
  c_.trainer.resolved_cwd = dir_.string() + "-link";
  c_.trainer.inputs = {"data/val.bin"};
  files = trainer_input_files(c_);
  fs::remove(dir_.string() + "-link");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].first, "data/val.bin");
}

// A folder on the way that is a loop of links matches nothing: said so,
// not left as a pattern that merely matched none.
TEST_F(TrainerInputsTest, ALinkLoopOnTheWayIsNamed) {
  fs::create_directory_symlink("loop-b", dir_ / "loop-a");
  fs::create_directory_symlink("loop-a", dir_ / "loop-b");
  c_.trainer.inputs = {"loop-a/data/*.bin"};
  EXPECT_EQ(refusal(), c_.file + ": trainer.inputs[0]: expected a pattern that matches at least one file in " +
                           dir_.string() + " (trainer.cwd), got \"loop-a/data/*.bin\", which matches none (" +
                           (dir_ / "loop-a" / "data").string() + " runs through a loop of symbolic links)");
}

}  // namespace
}  // namespace lockstep

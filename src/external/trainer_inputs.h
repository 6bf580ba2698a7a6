// A trainer smoke's declared data files (trainer.inputs): hashed into the
// run's fingerprint as a built-in smoke's data file is (data.file_xxh3), so
// a changed byte anywhere in them is "input changed", not a pass that
// happened to sample around it (docs/trainers.md, "Inputs").
//
//   Fingerprint fp;
//   add_trainer_inputs(cfg, fp);
//   // fp["trainer.inputs_xxh3"]: every file's path and content, an input
//   // fp["trainer.input.data/shakespeare_char/train.bin"]: that file's XXH3-128
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "record/fingerprint.h"
#include "smoke/smoke_config.h"

namespace lockstep {

/// At most this many files across trainer.inputs (a fingerprint field each).
inline constexpr size_t kMaxTrainerInputFiles = 10000;

/// The files trainer.inputs names, as {name, absolute path}, sorted by
/// name, each once. The name is the path under {data} ("{data}/digits.csv.gz":
/// the same on every machine), else relative to trainer.cwd, else under
/// {config_dir}, else absolute. The files: every match of each glob (glob(3), relative to trainer.cwd;
/// {data} and {config_dir} replaced as in the command), a
/// matched folder's regular files recursively. Throws exit-2 BadInput
/// naming the config, the field (trainer.inputs[i]) and what was expected:
/// a pattern that matches nothing, a match that is no regular file (a FIFO,
/// a dangling link: an unfetched LFS file looks like one), more than
/// kMaxTrainerInputFiles files.
std::vector<std::pair<std::string, std::string>> trainer_input_files(const SmokeConfig& config);

/// A path in a trainer's command or trainer.inputs as the trainer opens
/// it: `arg` with {data} and {config_dir} replaced by `data_dir` and
/// `config_dir` (expand_placeholders, as the command's arguments are), then
/// under `cwd` (trainer.cwd) unless absolute. E.g. "{data}/digits.csv.gz"
/// -> "/root/.cache/lockstep/data/digits.csv.gz"; "train.py" with cwd
/// "/repo" -> "/repo/train.py". Not normalised, not checked to exist.
std::string trainer_path(const std::string& arg, const std::string& cwd, const std::string& data_dir,
                         const std::string& config_dir);

/// Adds the fingerprint fields of trainer_input_files(config):
/// "trainer.input.<path>" (XXH3-128 of the file, informational: names what
/// changed) and "trainer.inputs_xxh3" (XXH3-128 of every path and hash,
/// an input: a file changed, added or removed fails the comparison).
/// Nothing without trainer.inputs. Hashes through the file-hash cache
/// (core/file_hash_cache.h). Throws as trainer_input_files(), and exit-2
/// Error for a file that cannot be read.
void add_trainer_inputs(const SmokeConfig& config, Fingerprint& fingerprint);

}  // namespace lockstep

// A golden: a blessed run record plus provenance and a content hash
// (docs/architecture.md, "Records and goldens"). Stored at
// goldens/<smoke>/<platform>.json and only ever written by `lockstep bless`.
//
//   Golden g = read_golden(path);          // exit 2 if malformed or hash mismatch
//   write_golden(path, g);                 // computes content_hash, atomic
//
// The content hash is XXH3-128 over the canonical JSON (sorted keys, no
// whitespace) of the golden without its "content_hash" member; any edit by
// hand changes it and `verify-goldens` / `check` reject the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "record/run_record.h"

namespace lockstep {

/// Who blessed a golden, when, why, and with what.
struct Provenance {
  std::string reason;        ///< --reason text, required
  std::string created_utc;   ///< ISO 8601, e.g. "2026-11-29T09:12:03Z"
  std::string git_commit;    ///< HEAD when blessed, or "(absent: ...)"
  std::string git_author;    ///< user.name <user.email> from the repo config
  std::string tool_version;  ///< lockstep version
  bool allow_dirty = false;  ///< blessed from a dirty work tree with --allow-dirty
  int runs = 0;              ///< bit-identical runs the bless required
  /// Multi-seed golden: every seed blessed (the config's first); empty for
  /// a single-seed golden (and then absent from the JSON).
  std::vector<uint64_t> seeds;
  /// Who wrote it: "bless", "accept" (a pending golden promoted), "check"
  /// (a pending golden a failing check left) or "import" (a pending golden
  /// `lockstep import --golden` made from another tool's curves); "" in
  /// goldens made before lockstep recorded it (and then absent from the JSON).
  std::string action;
  /// content_hash of the golden this one replaced; "" for a new golden.
  std::string replaces;
  /// $CI_JOB_URL and $CI_RUNNER_DESCRIPTION (GitLab) when written in CI; "" otherwise.
  std::string ci_job_url;
  std::string ci_runner;
  /// "<format> <absolute path> (xxh3 <16 hex digits of the file>)": the
  /// golden's curves were read from another tool's file by `lockstep import
  /// --golden`, not made by lockstep's runs (runs is 0; accept takes it
  /// without the bit-identical reruns and the contract check). "" otherwise.
  std::string imported_from;
  /// What the golden this one replaced checked and this one does not
  /// ("the series lr, batch probes"), when accepted with --allow-narrower;
  /// "" otherwise.
  std::string narrower;
};

/// A run record blessed as the reference.
struct Golden {
  RunRecord record;
  Provenance provenance;
  std::string content_hash;  ///< filled by write_golden / read_golden
};

/// The JSON of a golden without "content_hash".
nlohmann::json golden_body_json(const Golden& golden);

/// XXH3-128 hex over canonical_dump(body).
std::string golden_content_hash(const nlohmann::json& body);

/// Reads a golden. Throws exit-2 Error when the JSON is malformed, a field
/// is wrong, or the stored content hash does not match (edited by hand).
Golden read_golden(const std::string& path);

/// Reads either a golden or a plain run record (for `lockstep compare`);
/// a run record comes back with empty provenance, its series read from a
/// sidecar beside it when it has one.
Golden read_golden_or_record(const std::string& path);

/// Parses golden (or, with `allow_plain_record`, run record) JSON text;
/// `label` names the source in errors. Same checks as read_golden. A plain
/// run record may have a series sidecar in `sidecar_dir`; a golden never.
Golden golden_from_text(const std::string& text, const std::string& label, bool allow_plain_record,
                        const std::optional<std::string>& sidecar_dir = std::nullopt);

/// Writes `golden` atomically with its content hash; returns the hash.
std::string write_golden(const std::string& path, Golden golden);

}  // namespace lockstep

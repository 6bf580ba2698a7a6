// Edits of a JSON file that people wrote and review: one top-level key set,
// every other byte of the file kept (its order, spacing, line ends), so
// the change is a small, reviewable diff. `lockstep calibrate --write`
// writes its tolerances into the team's smoke config through this.
//
//   std::string text = read_file("smoke/wine-mlp.json");
//   text = with_top_level_key(text, "tolerance", {{"series", {{"loss", {{"rtol", 1e-4}}}}}});
//   write_file_atomically("smoke/wine-mlp.json", text);
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lockstep {

/// `text`, a valid JSON object, with top-level key `key` set to `value`:
/// the old value replaced where it stands, or the key added after the last
/// one. The new value is written pretty, indented by the unit of the
/// file's first key (two spaces in an empty object), with the file's line
/// ends ("\r\n" when its first line ends so). A key of the same name in a
/// nested object, or inside a string, is not touched. Throws exit-2 Error
/// naming `path` when `text` is not a JSON object.
std::string with_top_level_key(const std::string& text, const std::string& key, const nlohmann::ordered_json& value,
                               const std::string& path = "");

}  // namespace lockstep

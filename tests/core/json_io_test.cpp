#include "core/json_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace lockstep {
namespace {

std::string error_of(const std::function<void()>& f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(no error)";
}

TEST(ParseJson, TruncatedNamesFileAndSaysTruncated) {
  ExitCode code{};
  std::string msg = error_of([] { parse_json_text("{\"a\": [1, 2", "goldens/x.json"); }, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg, "goldens/x.json: line 1, column 12 (byte 11): expected complete JSON (file is truncated or empty)");
}

// Line and column for the person editing the file, the byte for a
// program, and what the parser expected there.
TEST(ParseJson, SyntaxErrorGivesLineColumnOffsetAndWhy) {
  std::string msg = error_of([] { parse_json_text("{\"a\": x}", "c.json"); });
  EXPECT_EQ(msg, "c.json: line 1, column 7 (byte 6): expected valid JSON (syntax error in a value: invalid literal)");
  // A comma left out at the end of line 2: found at the next key's end.
  msg = error_of([] { parse_json_text("{\n  \"steps\": 10\n  \"seed\": 1\n}\n", "smoke/a.json"); });
  EXPECT_EQ(msg, "smoke/a.json: line 3, column 8 (byte 23): expected valid JSON (syntax error in an object: unexpected "
                 "string literal; expected '}')");
  // A bad first line is at column 1, whatever follows it.
  EXPECT_EQ(error_of([] { parse_json_text("// c\n{}", "c.json"); }),
            "c.json: line 1, column 1 (byte 0): expected valid JSON (syntax error in a value: invalid literal)");
  // A bad literal is named where it starts, not where reading stopped.
  EXPECT_EQ(error_of([] { parse_json_text("{\"a\":tru}", "c.json"); }),
            "c.json: line 1, column 6 (byte 5): expected valid JSON (syntax error in a value: invalid literal)");
  // One stray character is a syntax error, not a truncated file.
  EXPECT_EQ(error_of([] { parse_json_text("x", "c.json"); }),
            "c.json: line 1, column 1 (byte 0): expected valid JSON (syntax error in a value: invalid literal)");
  EXPECT_EQ(error_of([] { parse_json_text("{\"a\": [1, 2", "c.json"); }),
            "c.json: line 1, column 12 (byte 11): expected complete JSON (file is truncated or empty)");
  // Cut inside a string or a literal: truncated too.
  EXPECT_EQ(error_of([] { parse_json_text("{\"ab", "c.json"); }),
            "c.json: line 1, column 5 (byte 4): expected complete JSON (file is truncated or empty)");
  EXPECT_EQ(error_of([] { parse_json_text("[tr", "c.json"); }),
            "c.json: line 1, column 2 (byte 1): expected complete JSON (file is truncated or empty)");
}

// A key written twice could show one value to a reviewer and the other to
// the comparator: refused, naming the key path and both byte offsets.
TEST(ParseJson, DuplicateKeysAreRefusedWithPathAndBothOffsets) {
  ExitCode code{};
  std::string msg = error_of([] { parse_json_text(R"({"steps": 10, "seed": 1, "steps": 12})", "smoke/a.json"); }, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg, "smoke/a.json: steps: expected each key once; it is written twice, at byte 1 and byte 25");
  EXPECT_EQ(error_of([] {
              parse_json_text(R"({"series": {"loss": {"values": [1]}, "lr": {"values": [1], "values": [2]}}})", "g.json");
            }),
            "g.json: series.lr.values: expected each key once; it is written twice, at byte 44 and byte 59");
  EXPECT_EQ(error_of([] { parse_json_text(R"({"probes": [{"batch": 0}, {"batch": 1, "batch": 2}]})", "r.json"); }),
            "r.json: probes[1].batch: expected each key once; it is written twice, at byte 27 and byte 39");
  // Written with an escape, or beside an integer only nlohmann reads (2^64+).
  EXPECT_EQ(error_of([] { parse_json_text(R"({"steps": 10, "st\u0065ps": 9})", "e.json"); }),
            "e.json: steps: expected each key once; it is written twice, at byte 1 and byte 14");
  EXPECT_EQ(error_of([] { parse_json_text(R"({"big": 100000000000000000000, "steps": 1, "steps": 2})", "b.json"); }),
            "b.json: steps: expected each key once; it is written twice, at byte 31 and byte 43");
  // The same key in sibling objects, and keys inside strings, are fine.
  EXPECT_NO_THROW(parse_json_text(R"({"a": {"k": 1}, "b": {"k": 2}, "c": "\"k\": 1, \"k\": 2"})", "ok.json"));
}

TEST(ParseJson, ANulByteIsRefusedWithItsOffset) {
  EXPECT_EQ(error_of([] { parse_json_text(std::string("{\"a\": 1}\0{\"steps\": 99}", 20), "n.json"); }),
            "n.json: byte 8: expected text without NUL bytes (the file holds binary data)");
}

TEST(ParseJson, NestingDeeperThanTheLimitIsRefusedAtItsByte) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  ExitCode code = ExitCode::kPass;
  EXPECT_EQ(error_of([&] { parse_json_text(deep, "deep.json"); }, &code),
            "deep.json: byte 256: expected arrays and objects nested at most 256 deep (lockstep's files nest a few "
            "levels)");
  EXPECT_EQ(code, ExitCode::kBadInput);
  // Brackets inside strings do not count; 256 levels are fine.
  EXPECT_NO_THROW(parse_json_text("{\"a\": \"[[[[[[\\\"[[[\"}", "s.json"));
  EXPECT_NO_THROW(parse_json_text(std::string(256, '[') + std::string(256, ']'), "ok.json"));
}

TEST(ParseJson, TrailingDataIsNotCalledTruncated) {
  EXPECT_EQ(error_of([] { parse_json_text("{\"a\": 1}x", "t.json"); }),
            "t.json: line 1, column 9 (byte 8): expected nothing after the JSON value (trailing data)");
  EXPECT_EQ(error_of([] { parse_json_text("{\"a\": 1}\n{\"a\": 2}\n", "t.json"); }),
            "t.json: line 2, column 1 (byte 9): expected nothing after the JSON value (trailing data)");
}

TEST(JsonView, UnknownKeySuggestsSpelling) {
  auto doc = nlohmann::json::parse(R"({"tolerence": {}})");
  JsonView v(doc, "smoke/a.json");
  std::string msg = error_of([&] { v.allow_keys({"tolerance", "steps"}); });
  EXPECT_EQ(msg, "smoke/a.json: tolerence: expected a known field, not 'tolerence' (did you mean 'tolerance'?)");
}

// Other tools' names for a field are pointed at ours, when ours is allowed.
TEST(JsonView, UnknownKeySuggestsOurNameForAnotherToolsSpelling) {
  auto doc = nlohmann::json::parse(R"({"learning_rate": 0.1})");
  JsonView v(doc, "smoke/a.json");
  EXPECT_EQ(error_of([&] { v.allow_keys({"name", "lr"}); }),
            "smoke/a.json: learning_rate: expected a known field, not 'learning_rate' (did you mean 'lr'?)");
  EXPECT_EQ(error_of([&] { v.allow_keys({"name", "steps"}); }),
            "smoke/a.json: learning_rate: expected a known field, not 'learning_rate'");
}

TEST(JsonView, AnOversizedKeyOrValueIsCutInTheMessage) {
  nlohmann::json doc = {{std::string(100000, 'k'), 1}, {"mode", std::string(100000, 'v')}};
  JsonView v(doc, "f.json");
  std::string cut_key = std::string(64, 'k') + "... (100000 bytes)";
  EXPECT_EQ(error_of([&] { v.allow_keys({"mode"}); }),
            "f.json: " + cut_key + ": expected a known field, not '" + cut_key + "'");
  EXPECT_EQ(error_of([&] { v.at("mode").as_enum({"strict", "default"}); }),
            "f.json: mode: expected one of \"strict\", \"default\", got \"" + std::string(64, 'v') +
                "... (100000 bytes)\"");
}

// A cut never splits a UTF-8 sequence, and a line break never starts a new log line.
TEST(JsonView, AValueInAMessageStaysValidUtf8OnOneLine) {
  std::string rlo = "\xe2\x80\xae";
  std::string v = std::string(62, 'x');
  for (int i = 0; i < 10; ++i) v += rlo;
  nlohmann::json doc = {{"device", v}, {"mode", "a\nb"}};
  JsonView j(doc, "f.json");
  EXPECT_EQ(error_of([&] { j.at("device").as_enum({"cpu"}); }),
            "f.json: device: expected one of \"cpu\", got \"" + std::string(62, 'x') + "... (92 bytes)\"");
  EXPECT_EQ(error_of([&] { j.at("mode").as_enum({"strict"}); }),
            "f.json: mode: expected one of \"strict\", got \"a\\x0ab\"");
}

TEST(JsonView, TypedAccessNamesThePath) {
  auto doc = nlohmann::json::parse(R"({"data": {"batch_size": 1.5, "workers": -1, "mode": "strikt"}})");
  JsonView v(doc, "f.json");
  EXPECT_EQ(error_of([&] { v.at("data").at("batch_size").as_int(1, 10); }),
            "f.json: data.batch_size: expected an integer in [1, 10], got 1.5");
  EXPECT_EQ(error_of([&] { v.at("data").at("workers").as_int(0, 64); }),
            "f.json: data.workers: expected an integer in [0, 64], got -1");
  EXPECT_EQ(error_of([&] { v.at("data").at("mode").as_enum({"strict", "default"}); }),
            "f.json: data.mode: expected one of \"strict\", \"default\", got \"strikt\" (did you mean \"strict\"?)");
  EXPECT_EQ(error_of([&] { v.at("data").at("seed"); }),
            "f.json: data.seed: expected a value (the field is missing)");
}

TEST(JsonView, ZeroAndHugeIntegersAreRangeChecked) {
  auto doc = nlohmann::json::parse(R"({"steps": 0, "big": 18446744073709551615})");
  JsonView v(doc, "f.json");
  EXPECT_EQ(error_of([&] { v.at("steps").as_int(1, 100); }), "f.json: steps: expected an integer in [1, 100], got 0");
  EXPECT_EQ(error_of([&] { v.at("big").as_int(1, 100); }),
            "f.json: big: expected an integer in [1, 100], got 18446744073709551615");
}

TEST(ParseJson, NumberBeyondDoubleIsExit2) {
  ExitCode code{};
  std::string msg = error_of([] { parse_json_text("{\"seed\": 1e400}", "c.json"); }, &code);
  EXPECT_EQ(code, ExitCode::kBadInput);
  EXPECT_EQ(msg, "c.json: byte 9: expected a number within the range of a float64 (at most about 1.8e308), got 1e400");
  // A string holding "1e400" is no number; the number after it is.
  EXPECT_EQ(error_of([] { parse_json_text("{\"s\": \"1e400\", \"v\": [1, -2e999]}", "c.json"); }),
            "c.json: byte 24: expected a number within the range of a float64 (at most about 1.8e308), got -2e999");
}

// A config saved as UTF-16 (a Windows editor, PowerShell's Out-File) is
// named as such, not as binary data.
TEST(ParseJson, Utf16IsNamed) {
  std::string le = std::string("\xff\xfe{\0}\0", 6), bare = std::string("{\0}\0", 4), be = std::string("\0{\0}", 4);
  EXPECT_EQ(error_of([&] { parse_json_text(le, "c.json"); }),
            "c.json: expected UTF-8 text; the file is UTF-16 little-endian (save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8)");
  EXPECT_NE(error_of([&] { parse_json_text(bare, "c.json"); }).find("the file is UTF-16 little-endian"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_json_text(be, "c.json"); }).find("the file is UTF-16 big-endian"), std::string::npos);
}

// Bytes that are not UTF-8 (a path from the file system) are written as
// "\xNN" text, never an exception; valid text is left as it is.
TEST(DumpJson, BytesThatAreNotUtf8AreEscaped) {
  nlohmann::json j = {{"path", "notes\xe9.txt"}, {"dir\xff", {"caf\xc3\xa9"}}};
  EXPECT_EQ(canonical_dump(j), "{\"dir\\\\xff\":[\"caf\xc3\xa9\"],\"path\":\"notes\\\\xe9.txt\"}");
  EXPECT_EQ(parse_json_text(pretty_dump(j), "x")["path"], "notes\\xe9.txt");
}

TEST(Utf8, WellFormedSequencesOnly) {
  EXPECT_EQ(valid_utf8("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  // Lone bytes, an overlong slash, a surrogate, beyond U+10FFFF, cut short.
  EXPECT_EQ(valid_utf8("\xff\xe9x\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x86"),
            "\\xff\\xe9x\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80\\xe2\\x86");
  EXPECT_EQ(printable_message("dir\xff/a\x1b[31m"), "dir\\xff/a\\x1b[31m");
}

TEST(JsonView, NonFiniteStrings) {
  auto doc = nlohmann::json::parse(R"(["nan", "inf", "-inf", 2.5, "x"])");
  JsonView v(doc, "f.json");
  EXPECT_TRUE(std::isnan(v.at(0).as_double()));
  EXPECT_EQ(v.at(1).as_double(), INFINITY);
  EXPECT_EQ(v.at(2).as_double(), -INFINITY);
  EXPECT_EQ(v.at(3).as_double(), 2.5);
  EXPECT_EQ(error_of([&] { v.at(4).as_double(); }),
            "f.json: [4]: expected a number (or \"nan\", \"inf\", \"-inf\"), got string");
}

TEST(ClosestSpelling, OnlyCloseWords) {
  EXPECT_EQ(closest_spelling("tolerence", {"tolerance", "steps"}), "tolerance");
  EXPECT_EQ(closest_spelling("zzzzzz", {"tolerance", "steps"}), "");
}

// Taking a record's per-step arrays out while parsing changes nothing a
// reader can see: every input is accepted or refused as without the rule,
// with the same message, and the document with its arrays put back is
// the same document, number types included (2 stays an integer, 2.0 a float).
TEST(TakenArrays, ParsingWithTheRuleAcceptsAndRefusesExactlyWhatParsingWithoutDoes) {
  const std::vector<std::string> texts = {
      R"({"series": {"loss": {"dtype": "float64", "values": [0.5, 1e-3, -0.0, 2.5E+2, 1.0]}}})",
      R"({"series": {"loss": {"values": [0.5, "nan", "inf", "-inf", 0.25]}}, "steps": 5})",
      R"({"series": {"loss": {"values": [0.5, 2, 0.25]}}})",             // an integer: stays nodes
      // 19 significant digits or more: simdjson 3.0's get_number() reads 0 (#2099)
      R"({"series": {"loss": {"values": [1.234567890123456789, 1.500000000000000000, 1.0000000000000000000e5]}},)"
      R"( "x": 30.0000000000000000000, "y": [123456789.12345678901]})",
      // ... and get_double() 0.0019 for a fraction below 1; an exponent of 20 digits
      R"({"series": {"loss": {"values": [0.500000000000000000000, 0.1000000000000000055511151231257827, 1e00000000000000000001]}}})",
      R"({"series": {"loss": {"values": [1e-999999999999999999999, -0.5e-400, 0.5]}}, "z": 0.300000000000000000000e2})",
      R"({"series": {"loss": {"values": [0.5, 0.5e400000000000000000000]}}})",
      R"({"series": {"loss": {"values": [0.5, -0, 18446744073709551615, 1.5]}}})",
      R"({"series": {"loss": {"values": [0.5, "x", 0.25]}}})",           // a string: stays nodes
      R"({"series": {"loss": {"values": [0.5, null, [1.5], {"a": 1.5}]}}})",
      R"({"series": {"loss": {"values": [], "mean": [1.5], "std": [0.0]}}})",
      R"({"resources": {"step_time_s": [0.125, 0.5]}, "probes": [1.5, 2.5]})",
      R"({"series": {"loss": {"values": [1.5]}}, "s": "é
"q""})",
      R"({"series": {"loss": {"values": [1.5]}}}   )" "\n",
      R"({"series": {"loss": {"values": [1.5]}}} x)",                      // trailing data
      R"({"series": {"loss": {"values": [1.5]}}}{})",
      R"({"series": {"loss": {"values": [1.5]}, "loss": {"values": [2.5]}}})",  // a key twice
      R"({"a": 1, "a": 2})",
      R"({"series": {"loss": {"values": [1.5, 2.5)",                      // truncated
      R"({"series": {"loss": {"values": [1.5, tru]}}})",
      R"({"series": {"loss": {"values": [1.5, 1e400]}}})",
      R"({"n": 18446744073709551616, "m": -9223372036854775809})",
      R"([1.5, 2.5])",
      R"("text")",
      "",
      "{\"a\": \"\x01\"}",
      std::string(300, '[') + std::string(300, ']'),
      "{\"a\":" + std::string(300, '[') + std::string(300, ']') + "}",
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text.substr(0, 120));
    std::string plain_error, taken_error, plain_dump, taken_dump;
    try {
      plain_dump = parse_json_text(text, "r.json").dump();
    } catch (const Error& e) {
      plain_error = e.what();
    }
    try {
      TakenArrays taken;
      nlohmann::json doc = parse_json_text(text, "r.json", take_record_arrays, taken);
      taken.restore(doc);
      taken_dump = doc.dump();
    } catch (const Error& e) {
      taken_error = e.what();
    }
    EXPECT_EQ(taken_error, plain_error);
    EXPECT_EQ(taken_dump, plain_dump);
  }
}

TEST(TakenArrays, FloatArraysAtRecordPathsAreTakenBitForBit) {
  TakenArrays taken;
  nlohmann::json doc = parse_json_text(
      R"({"series": {"loss": {"values": [0.1, -0.0, "nan", "-inf", 5e-324], "steps": [0.5, 1.5]}},)"
      R"( "resources": {"step_time_s": [0.25]}, "other": [1.5]})",
      "r.json", take_record_arrays, taken);
  const nlohmann::json& values = doc["series"]["loss"]["values"];
  ASSERT_TRUE(TakenArrays::is_reference(values));
  std::vector<double> v = taken.take(values);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0], 0.1);
  EXPECT_TRUE(std::signbit(v[1]) && v[1] == 0.0);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[4], 5e-324);
  EXPECT_TRUE(taken.take(values).empty());  // moved out once
  TakenArrays long_digits;
  nlohmann::json d = parse_json_text(R"({"series": {"loss": {"values": [1.234567890123456789, 2.50000000000000000000]}}})",
                                     "r.json", take_record_arrays, long_digits);
  EXPECT_EQ(long_digits.take(d["series"]["loss"]["values"]), (std::vector<double>{1.2345678901234567, 2.5}));
  TakenArrays small;
  nlohmann::json e = parse_json_text(R"({"series": {"loss": {"values": [0.500000000000000000000, 1.5e+0000000000000000000000001, -1e-999999999999999999999]}}})",
                                     "r.json", take_record_arrays, small);
  std::vector<double> sv = small.take(e["series"]["loss"]["values"]);
  ASSERT_EQ(sv.size(), 3u);
  EXPECT_EQ(sv[0], 0.5);
  EXPECT_EQ(sv[1], 15.0);
  EXPECT_TRUE(sv[2] == 0.0 && std::signbit(sv[2]));
  EXPECT_TRUE(TakenArrays::is_reference(doc["resources"]["step_time_s"]));
  // Only the rule's paths: a series' steps and any other array stay JSON.
  EXPECT_TRUE(doc["series"]["loss"]["steps"].is_array());
  EXPECT_TRUE(doc["other"].is_array());
  // An array inside one at a rule's path is an element, not a series: left
  // as JSON, so a reader names it "an array".
  TakenArrays nested;
  nlohmann::json inner = parse_json_text(R"({"series": {"loss": {"values": [[0.5], 0.25]}}})", "r.json",
                                         take_record_arrays, nested);
  EXPECT_TRUE(inner["series"]["loss"]["values"].is_array());
  EXPECT_TRUE(inner["series"]["loss"]["values"][0].is_array());
}

}  // namespace
}  // namespace lockstep

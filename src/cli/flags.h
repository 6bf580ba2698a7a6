// How lockstep's command line reads values, shared by every command's
// flags (cli/main.cpp): integers and real numbers in decimal within a
// range, old spellings kept as hidden aliases that say what replaced them
// (docs/architecture.md, "One flag vocabulary"), and the rows of
// plan/run_flags.h registered as `run`'s, `probe`'s or check's flags.
//
//   cmd->add_option("--repeat", n, "Fresh runs")->transform(decimal_range(1, 100));
//   add_deprecated(cmd, "--repeats", n, "--repeat N");   // hidden; one note on stderr when used
//   add_run_flags(run_cmd, *request, RunFlagSet::kRun);   // every row of plan/run_flags.h
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace lockstep {

/// The option group of what --help leaves out: the flags between
/// lockstep's own processes, test hooks and old spellings. A named group,
/// not CLI11's "" (whose options lose their name in CLI11's messages):
/// HelpFormatter skips it.
inline constexpr const char* kHiddenGroup = "hidden";

/// CLI11's help, without the options of kHiddenGroup. Set on the app before
/// its subcommands are added (they copy it).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_group(std::string group, bool is_positional, std::vector<const CLI::Option*> opts) const override {
    return group == kHiddenGroup ? std::string() : CLI::Formatter::make_group(group, is_positional, opts);
  }
};

/// Every option of `app` and its subcommands that takes a value refuses an
/// empty one, by the option's name ("--goldens: expected a value, got an
/// empty string"): a path or word given as "" is a mistake (an unset
/// variable in a CI script), never a request for the default. Options
/// whose value is optional are left alone. Call once, after every option
/// is added.
void refuse_empty_values(CLI::App& app);

/// After a failed parse of `args` (argv without the program) by `app`: a
/// line naming what was mistyped and its closest spelling ("unknown
/// command 'chek' (did you mean 'check'?)", "unknown command 'plna' of
/// `lockstep hook` (did you mean 'plan'?)", "--golden is not a flag of
/// `lockstep check` (did you mean --goldens?)", "-varaint is not a flag
/// of `lockstep run` (did you mean --variant?)"), or "" when the error is
/// not a misspelling. CLI11 says neither; the word is the whole error (the
/// value it swallowed or the option it left missing follow from it).
std::string misspelling_hint(CLI::App& app, const std::vector<std::string>& args);

/// CLI11's error `e` after parsing `args` in lockstep's words where
/// CLI11's are cryptic: "--format given 2 times; give it once (`lockstep
/// env --help`)" for "--format: At Most 1 required but received 2", and
/// "`lockstep run` does not take 'extra'; ..." for words CLI11 did not
/// expect (its list reverses them). "" otherwise.
std::string usage_error_said(CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e);

/// Checked before the parse: "--record=: expected a value after '='" for
/// the first `--flag=` with nothing after '=' in `args` (before a bare
/// "--"), which CLI11 would read as the flag taking the next word; "" when
/// there is none.
std::string empty_assignment(const std::vector<std::string>& args);

/// An integer flag's value in [lo, hi], written in decimal. CLI11 reads
/// integers with strtoll base 0, so "010" would be 8 and "0x2" 2 (a world
/// size is part of the contract); leading zeros are dropped instead
/// ("010" is 10) and anything but digits is refused.
CLI::Validator decimal_range(uint64_t lo, uint64_t hi);

/// The same for a signed integer: an optional '-', then decimal digits
/// ("-1"; "010" is 10, "-0x1" is refused).
CLI::Validator signed_decimal_range(int64_t lo, int64_t hi);

/// A real-valued flag's value in [lo, hi], written as a decimal number
/// ("0.001", "1e-6"): CLI11 would take "0x2" as hex and "nan" as a number
/// that no range excludes.
CLI::Validator decimal_number(double lo, double hi);

/// An old spelling with the flag that replaced it: given together, which
/// one counts would be a guess (refuse_doubled_spellings).
struct DeprecatedPair {
  std::string old, now;           ///< the two spellings, "--out" and "--record"
  CLI::Option *alias, *current;   ///< their options
};

/// Every pair add_deprecated() made, in this process.
std::vector<DeprecatedPair>& deprecated_pairs();

/// After the parse: throws BadUsage (exit 2) when an old spelling was given
/// more than once, or together with the flag that replaced it, naming both.
void refuse_doubled_spellings();

/// An old spelling of a flag, kept working: hidden from --help, bound to
/// what `now` binds (the caller adds the same checks), and one line on
/// stderr names the spelling that replaced it ("--record FILE": the flag,
/// then what it takes). The remembered command line gets the new spelling,
/// so a front that hands the command to lockstep-torch does not say it twice.
template <class T>
CLI::Option* add_deprecated(CLI::App* cmd, const std::string& old, T& value, const std::string& now) {
  const std::string flag = now.substr(0, now.find(' '));
  CLI::Option* alias = cmd->add_option(old, value, "");
  if (CLI::Option* current = cmd->get_option_no_throw(flag)) deprecated_pairs().push_back({old, flag, alias, current});
  // Given twice, it is refused after the parse, naming the flag that
  // replaced it (refuse_doubled_spellings), with the note said once.
  auto said = std::make_shared<bool>(false);
  return alias->group(kHiddenGroup)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->each([old, now, flag, said](const std::string&) {
    if (!*said) std::cerr << "lockstep: note: " << old << " is deprecated; use " << now << " (the same meaning)\n";
    *said = true;
    respell_remembered_flag(old, {flag});
  });
}

/// Which rows of plan/run_flags.h a command takes.
enum class RunFlagSet {
  kRun,        ///< `lockstep run`: every row
  kProbe,      ///< `lockstep probe`: the rows not marked run_only
  kOverrides,  ///< check: the rows of RunOverrides that `probe` takes (passed on to its runs)
};

/// Registers `which` rows of plan/run_flags.h on `cmd`, bound to `request`
/// (which must outlive the parse), with each row's checks, hidden rows out
/// of --help, and each row's old spelling as add_deprecated() makes it.
void add_run_flags(CLI::App* cmd, RunRequest& request, RunFlagSet which);

}  // namespace lockstep

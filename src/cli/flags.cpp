#include "cli/flags.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <type_traits>

#include "core/error.h"
#include "core/json_io.h"
#include "plan/run_flags.h"

namespace lockstep {

CLI::Validator decimal_range(uint64_t lo, uint64_t hi) {
  std::string range = "[" + std::to_string(lo) + " - " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "expected a decimal integer in " + range + ", got '" + text + "'";
        size_t first = text.find_first_not_of('0');
        text = first == std::string::npos ? "0" : text.substr(first);
        uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || value < lo || value > hi)
          return "expected a decimal integer in " + range + ", got " + text;
        return "";
      },
      "INT in " + range);
}

CLI::Validator signed_decimal_range(int64_t lo, int64_t hi) {
  std::string range = "[" + std::to_string(lo) + " - " + std::to_string(hi) + "]";
  const CLI::Validator magnitude = decimal_range(0, static_cast<uint64_t>(std::max(-lo, hi)));
  return CLI::Validator(
      [lo, hi, range, magnitude](std::string& text) -> std::string {
        const bool negative = !text.empty() && text[0] == '-';
        std::string digits = negative ? text.substr(1) : text;
        if (!magnitude(digits).empty()) return "expected a decimal integer in " + range + ", got '" + text + "'";
        const int64_t value = negative ? -std::stoll(digits) : std::stoll(digits);
        if (value < lo || value > hi) return "expected a decimal integer in " + range + ", got " + text;
        text = std::to_string(value);  // leading zeros dropped, "-0" is 0
        return "";
      },
      "INT in " + range);
}

CLI::Validator decimal_number(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        static const std::regex kDecimal(R"([0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?)");
        char range[96];
        std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
        if (!std::regex_match(text, kDecimal)) return "expected a decimal number in " + std::string(range) + ", got '" + text + "'";
        double v = std::strtod(text.c_str(), nullptr);
        if (!(v >= lo && v <= hi)) return "expected a decimal number in " + std::string(range) + ", got " + text;
        return "";
      },
      "NUMBER");
}

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator not_empty(
      [](std::string& value) { return value.empty() ? std::string("expected a value, got an empty string") : ""; }, "");
  for (CLI::Option* option : app.get_options([](const CLI::Option*) { return true; }))
    if (option->get_type_size() > 0 && option->get_expected_min() > 0) option->check(not_empty);
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) refuse_empty_values(*sub);
}

namespace {

// The commands parsed, outermost first: {lockstep, history, add}.
std::vector<CLI::App*> parsed_chain(CLI::App& app) {
  std::vector<CLI::App*> chain{&app};
  while (!chain.back()->get_subcommands().empty()) chain.push_back(chain.back()->get_subcommands().front());
  return chain;
}

std::string chain_path(const std::vector<CLI::App*>& chain, size_t depth) {
  std::string path = "lockstep";
  for (size_t i = 1; i <= depth; ++i) path += " " + chain[i]->get_name();
  return path;
}

// A word where the deepest command parsed expects one of its own commands:
// the first word after that command's name that is not a flag (`lockstep
// chek`, `lockstep hook plna`, `lockstep history ad`). "" when it names
// one, or none is close and the command may go without one.
std::string command_hint(const std::vector<CLI::App*>& chain, const std::vector<std::string>& args) {
  CLI::App* at = chain.back();
  std::vector<std::string> names;
  for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  if (names.empty()) return "";
  size_t i = 0;
  for (size_t depth = 1; depth < chain.size(); ++depth) {  // past the names of the commands parsed
    while (i < args.size() && args[i] != chain[depth]->get_name()) ++i;
    ++i;
  }
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& word = args[i];
    if (word.empty() || word[0] == '-') continue;
    if (std::find(names.begin(), names.end(), word) != names.end()) return "";
    const std::string close = closest_spelling(word, names);
    const bool needs_one = chain.size() == 1 || at->get_require_subcommand_min() > 0;
    if (close.empty() && !needs_one) return "";
    const std::string path = chain_path(chain, chain.size() - 1);
    return "unknown command '" + word + "'" + (chain.size() == 1 ? "" : " of `" + path + "`") +
           (close.empty() ? "" : " (did you mean '" + close + "'?)") + "; `" + path + " --help` lists " +
           (chain.size() == 1 ? "the" : "its") + " commands";
  }
  return "";
}

// A word given as a flag that no command parsed has, deepest first:
// "--varaint", "-varaint" (a single dash: CLI11 reads it as short flags).
std::string flag_hint(const std::vector<CLI::App*>& chain) {
  for (size_t depth = chain.size(); depth-- > 0;) {
    CLI::App* at = chain[depth];
    std::vector<std::string> flags;
    for (const CLI::Option* option : at->get_options([](const CLI::Option* o) { return o->get_group() != kHiddenGroup; }))
      for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& extra : at->remaining()) {
      if (extra == "--") break;  // what follows is positional
      if (extra.size() < 2 || extra[0] != '-' || (extra[1] != '-' && extra.size() == 2)) continue;
      const std::string flag = extra.substr(0, extra.find('='));
      if (flag.size() < 2) continue;  // "-=1": CLI11's split of "-q=1"
      const std::string close = closest_spelling(flag[1] == '-' ? flag : "-" + flag, flags);
      const std::string path = chain_path(chain, depth);
      return flag + " is not a flag of `" + path + "`" + (close.empty() ? "" : " (did you mean " + close + "?)") +
             "; `" + path + " --help` lists its flags";
    }
  }
  return "";
}

}  // namespace

std::string misspelling_hint(CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<CLI::App*> chain = parsed_chain(app);
  if (std::string hint = command_hint(chain, args); !hint.empty()) return hint;
  return flag_hint(chain);
}

std::string usage_error_said(CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  const std::vector<CLI::App*> chain = parsed_chain(app);
  const std::string path = chain_path(chain, chain.size() - 1);
  // "--format: At Most 1 required but received 2"
  const std::string what = e.what();
  const std::string at_most = ": At Most 1 required but received ";
  if (size_t at = what.find(at_most); dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && at != std::string::npos)
    return what.substr(0, at) + " given " + what.substr(at + at_most.size()) + " times; give it once (`" + path +
           " --help`)";
  // "The following arguments were not expected: extra --": the words in
  // the order given.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::vector<std::string> extras;
    for (const CLI::App* at : chain)
      for (const std::string& word : at->remaining())
        if (word != "--") extras.push_back(word);
    std::string listed;
    auto list = [&listed](const std::string& word) { listed += (listed.empty() ? "'" : ", '") + word + "'"; };
    for (const std::string& word : args)
      if (auto it = std::find(extras.begin(), extras.end(), word); it != extras.end()) {
        list(word);
        extras.erase(it);
      }
    for (const std::string& word : extras) list(word);  // as CLI11 split it ("-=1" of "-q=1")
    if (!listed.empty()) return "`" + path + "` does not take " + listed + "; `" + path + " --help` lists what it takes";
  }
  return "";
}

std::string empty_assignment(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' && a.find('=') == a.size() - 1)
      return a + ": expected a value after '='";
  }
  return "";
}

std::vector<DeprecatedPair>& deprecated_pairs() {
  static std::vector<DeprecatedPair> pairs;
  return pairs;
}

void refuse_doubled_spellings() {
  for (const DeprecatedPair& p : deprecated_pairs()) {
    if (p.alias->count() > 1)
      throw BadUsage(p.old + " given " + std::to_string(p.alias->count()) + " times; give " + p.now + " once");
    if (p.alias->count() > 0 && p.current->count() > 0)
      throw BadUsage(p.old + " and " + p.now + " name one thing (" + p.old + " is its old spelling); give " + p.now +
                     " only");
  }
}

namespace {

// A row's checks on an option of type T: its range, its words, not empty.
template <class T>
void add_checks(CLI::Option* option, const RunFlag& flag) {
  if constexpr (std::is_integral_v<T>) {
    if (flag.lo_ < flag.hi_)
      option->transform(decimal_range(static_cast<uint64_t>(flag.lo_), static_cast<uint64_t>(flag.hi_)));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (flag.lo_ < flag.hi_) option->check(decimal_number(flag.lo_, flag.hi_));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!flag.choices_.empty()) option->check(CLI::IsMember(flag.choices_));
    if (flag.not_empty_ != nullptr) {
      const std::string what = flag.not_empty_;
      option->check([what](const std::string& v) { return v.empty() ? what : std::string(); });
    }
  }
}

CLI::Option* add_run_flag(CLI::App* cmd, RunRequest& request, const RunFlag& flag) {
  RunRequest defaults;
  return std::visit(
      [&](const auto& field) -> CLI::Option* {
        auto& value = field(request);
        using T = std::decay_t<decltype(value)>;
        CLI::Option* option = nullptr;
        if constexpr (std::is_same_v<T, bool>) {
          const bool given = !field(defaults);  // a switch sets its field away from the default
          option = cmd->add_flag_callback(flag.names_, [&value, given] { value = given; }, flag.help_);
        } else {
          option = cmd->add_option(flag.names_, value, flag.help_);
          add_checks<T>(option, flag);
          if (flag.old_ != nullptr)
            add_checks<T>(add_deprecated(cmd, flag.old_, value, flag.name() + " " + flag.takes_), flag);
        }
        if (flag.hidden_) option->group(kHiddenGroup);
        return option;
      },
      flag.field_);
}

}  // namespace

void add_run_flags(CLI::App* cmd, RunRequest& request, RunFlagSet which) {
  std::vector<std::pair<const RunFlag*, CLI::Option*>> added;
  for (const RunFlag& flag : run_flags()) {
    if (flag.run_only_ && which != RunFlagSet::kRun) continue;
    if (!flag.override_ && which == RunFlagSet::kOverrides) continue;
    added.push_back({&flag, add_run_flag(cmd, request, flag)});
  }
  for (const auto& [flag, option] : added) {
    if (flag->needs_ != nullptr) option->needs(cmd->get_option(flag->needs_));
    for (const char* other : flag->excludes_) option->excludes(cmd->get_option(other));
  }
}

}  // namespace lockstep

// The flags of `lockstep run` and `lockstep probe`, declared once: each row
// names a RunRequest field (plan/run_plan.h), its spelling, its help line
// and the values it takes. cli/ registers the rows with CLI11
// (cli/flags.h's add_run_flags) and plan/'s run_request_args() writes a
// child's command line from the same rows, so a new run option is one field
// in RunRequest and one row here. The two values that travel in a child's
// environment, not on its command line (the seed, LOCKSTEP_SEED, and
// `--vary`, LOCKSTEP_VARY), have no row.
//
//   RunFlag("--stop-after", "Checkpoint after K steps and stop", &RunRequest::stop_after)
//       .run_only().range(1, 1000000).needs("--checkpoint");
//   RunRequest r;  r.stop_after = 3;
//   write_run_flag(run_flags()[i], r);   // {"--stop-after", "3"}: set away from its default
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "plan/run_plan.h"

namespace lockstep {

/// The field a row binds, as a reference into a RunRequest.
template <class T>
using RunField = std::function<T&(RunRequest&)>;

/// One of the field types a run flag takes: a path or word, a repeatable
/// word, an integer, a count of steps, a real number, or a switch.
using AnyRunField = std::variant<RunField<std::string>, RunField<std::vector<std::string>>, RunField<int>,
                                 RunField<int64_t>, RunField<double>, RunField<bool>>;

/// One flag of `run`/`probe`, built as LibTorch's option structs are: the
/// constructor takes what every flag has, each setter one property.
struct RunFlag {
  /// A flag bound to a field of the request (`&RunRequest::out`).
  template <class T>
  RunFlag(const char* names, const char* help, T RunRequest::*member)
      : names_(names), help_(help), field_(RunField<T>([member](RunRequest& r) -> T& { return r.*member; })) {}
  /// A flag bound to a field of the request's overrides
  /// (`&RunOverrides::workers`): check passes these on to its runs too.
  template <class T>
  RunFlag(const char* names, const char* help, T RunOverrides::*member)
      : names_(names),
        help_(help),
        field_(RunField<T>([member](RunRequest& r) -> T& { return r.overrides.*member; })),
        override_(true) {}

  RunFlag& run_only() { run_only_ = true; return *this; }      ///< `probe` has no such flag
  RunFlag& hidden() { hidden_ = true; return *this; }          ///< between lockstep's processes; not in --help
  /// An integer's or a number's accepted values, [lo, hi].
  RunFlag& range(double lo, double hi) { lo_ = lo; hi_ = hi; return *this; }
  /// A word's accepted values.
  RunFlag& choices(std::vector<std::string> words) { choices_ = std::move(words); return *this; }
  /// A string that must not be empty, and what to say when it is
  /// ("a file path for the record, not empty").
  RunFlag& not_empty(const char* what) { not_empty_ = what; return *this; }
  RunFlag& needs(const char* flag) { needs_ = flag; return *this; }        ///< only with that flag
  RunFlag& excludes(const char* flag) { excludes_.push_back(flag); return *this; }  ///< never with that flag
  /// An old spelling kept as a hidden alias that prints a one-line
  /// deprecation (docs/architecture.md, "One flag vocabulary"), and what the
  /// flag takes ("FILE"), as the note says it.
  RunFlag& deprecated(const char* old, const char* takes) { old_ = old; takes_ = takes; return *this; }

  const char* names_;        ///< CLI11's spelling: "--record", "-q,--quiet"
  const char* help_;         ///< the --help line
  AnyRunField field_;        ///< what it sets
  bool override_ = false;    ///< a field of RunOverrides
  bool run_only_ = false;
  bool hidden_ = false;
  double lo_ = 0, hi_ = 0;   ///< lo_ < hi_: a range
  std::vector<std::string> choices_;
  const char* not_empty_ = nullptr;
  const char* needs_ = nullptr;
  std::vector<const char*> excludes_;
  const char* old_ = nullptr;
  const char* takes_ = nullptr;

  /// The long spelling, written on a child's command line: "--quiet".
  std::string name() const;
};

/// Every row, in the order a child's command line lists them.
const std::vector<RunFlag>& run_flags();

/// The flag and its value(s) that ask for `request`'s field: nothing when
/// the field has its default (RunRequest{}'s), the flag alone for a switch,
/// the flag once per word of a list, numbers in decimal (a real number as
/// format_double writes it, which reads back bit for bit).
std::vector<std::string> write_run_flag(const RunFlag& flag, const RunRequest& request);

}  // namespace lockstep

#!/usr/bin/env bash
# Writes lockstep(1), the installed man page, from the executable's own
# --help text (so it never drifts from the options): the summary, then one
# section per subcommand with its `--help`.
#   ci/make-man.sh build/lockstep > build/lockstep.1     (CMake runs it)
set -euo pipefail
bin="$1"
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
version=$("$bin" --version | awk '{print $2}')
echo ".TH LOCKSTEP 1 \"\" \"lockstep $version\" \"User Commands\""
echo ".SH NAME"
echo "lockstep \\- determinism regression checker for deep-learning training"
echo ".SH SYNOPSIS"
echo ".B lockstep"
echo "\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]"
echo ".SH DESCRIPTION"
echo "Runs fixed-seed smoke trainings (built-in LibTorch ones, or a team's own Python trainer) and data-only"
echo "passes, and compares their curves and per-batch checksums against goldens committed in the repository."
echo "Exit codes: 0 pass, 1 regression, 2 bad input, 3 environment, 4 nondeterministic."
echo ".SH COMMANDS"
# commands_in HELP_TEXT: the command names its group sections list (every
# "Heading:" section but Options and Positionals), in order.
commands_in() {
  awk '/^[A-Z][^:]*:$/ {on = ($0 != "Options:" && $0 != "Positionals:"); next} /^[^ ]/ {on = 0} on && /^  [a-z]/ {print $1}'
}
for s in $("$bin" --help | commands_in); do
  echo ".SS lockstep $s"
  echo ".nf"
  "$bin" "$s" --help 2>&1 | sed "s|^Usage: [^ ]*|Usage: lockstep|" | esc
  # Its own subcommands (hook install, history add, ...), each with its help.
  for sub in $("$bin" "$s" --help 2>&1 | commands_in); do
    echo
    "$bin" "$s" "$sub" --help 2>&1 | sed "s|^Usage: [^ ]*|Usage: lockstep|" | esc
  done
  echo ".fi"
done
echo ".SH FILES"
echo "share/lockstep/ beside the executables: the Python helper, the CI template, the pre-push hook, the record schema."
echo ".SH SEE ALSO"
echo "/usr/share/doc/lockstep/README.md, smoke-config.md, trainers.md"

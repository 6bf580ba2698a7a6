# Shared timing for the bench scripts: the best of K wall times of a
# command, with the user and system CPU time of that same run (the
# command's and its children's, from bash's `time`). Source it:
#
#   source bench/timing.sh
#   best_of 5 lockstep check smoke/ -j 1     # sets BEST_WALL, BEST_USER, BEST_SYS (seconds)
#   echo "$(timing_line)"                     # "4.47 s wall (3.31 user + 1.54 sys)"
#
# Scripts that keep a median instead: one run at a time, then the run whose
# wall time is the median, with its own user and system time:
#
#   run_timed lockstep run smoke/wine-mlp.json >>"$work/runs"   # a line "WALL USER SYS"
#   timed_line "$(median_line "$work/runs")"                      # "4.47 s wall (3.31 user + 1.54 sys)"
#
# A figure on a VM: the wall time is what the goal is about; user + sys
# beside it says whether the CPU or the kernel (page faults, fresh memory)
# took it (docs/development.md, "Reading a figure on a VM"). The command's
# output is discarded; a failing command stops the bench (exit 1).

# best_of K CMD...: runs CMD K times and keeps the fastest run's times.
best_of() {
  local k=$1; shift
  BEST_WALL="" BEST_USER="" BEST_SYS=""
  local i t
  for ((i = 0; i < k; i++)); do
    t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "bench: $* failed" >&2; exit 1; }
    read -r w u s <<<"$(tail -n1 <<<"$t")"
    if [[ -z "$BEST_WALL" ]] || awk -v a="$w" -v b="$BEST_WALL" 'BEGIN { exit !(a < b) }'; then
      BEST_WALL=$w BEST_USER=$u BEST_SYS=$s
    fi
  done
}

# timing_line: the kept run as "W s wall (U user + S sys)".
timing_line() { printf '%6.2f s wall (%.2f user + %.2f sys)' "$BEST_WALL" "$BEST_USER" "$BEST_SYS"; }

# run_timed CMD...: runs CMD once, its output to $TIMED_LOG (default
# /dev/null), and prints "WALL USER SYS" in seconds. A failing command
# stops the bench (exit 1), showing its log when there is one.
run_timed() {
  local t log=${TIMED_LOG:-/dev/null}
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >"$log" 2>&1; } 2>&1 ) || {
    echo "bench: $* failed" >&2
    [[ "$log" != /dev/null ]] && cat "$log" >&2
    exit 1
  }
  tail -n1 <<<"$t"
}

# median_line FILE: of FILE's lines "WALL USER SYS ...", the one whose wall
# time is the median (the lower one of an even count).
median_line() { sort -g "$1" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'; }

# timed_line "WALL USER SYS": "W s wall (U user + S sys)".
timed_line() {
  local w u s
  read -r w u s _ <<<"$1"
  printf '%6.2f s wall (%.2f user + %.2f sys)' "$w" "$u" "$s"
}

# Interleaved best-of loops over `lockstep run` (trace_overhead.sh,
# digest_overhead.sh):
# steps_s RECORD: median seconds of the record's steady training steps
# (resources.step_time_s, step 0 left out).
steps_s() {
  /usr/bin/python3 -c 'import json,statistics,sys; print(statistics.median(json.load(open(sys.argv[1]))["resources"]["step_time_s"][1:]))' "$1"
}
# min T BEST: the lower of two numbers (BEST may be "").
min() { awk -v t="$1" -v b="$2" 'BEGIN{print (b==""||t<b)?t:b}'; }
# best "W U S" "W U S": the line of the lower wall time (either may be "").
best() { if [[ -z "$2" ]] || awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN{exit !(a < b)}'; then echo "$1"; else echo "$2"; fi; }
# timed_run LOCKSTEP CONFIG RECORD: one timed `lockstep run CONFIG --record
# RECORD`: "<wall s> <user s> <sys s> <median training step s>".
timed_run() { echo "$(run_timed "$1" run "$2" --record "$3") $(steps_s "$3")"; }

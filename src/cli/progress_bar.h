// A progress bar for long passes, on a terminal only.
//
//   ProgressBar bar("probe digits-cnn", /*total=*/56);
//   for (...) bar.update(k + 1);
//   bar.finish();
//
// Silent unless stderr is a TTY and the pass has run for more than two
// seconds (short passes and CI logs stay clean); redraws at most ten times
// a second on one line, and finish() erases it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lockstep {

/// "label [#####.....] done/total" on stderr, see above.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();
  /// Reports `done` units of `total`; cheap when nothing is drawn.
  void update(int64_t done);
  /// Erases the bar if it was drawn.
  void finish();

 private:
  std::string label_;
  int64_t total_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace lockstep

// The history read back: each metric classified as the peers' reports do
// (regression, suspicious, drifting, steady, insufficient data), the first
// night its values changed and what else changed that night, and the
// reports naming them.
#include "history/history.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "core/atomic_file.h"
#include "history/ledger.h"

namespace lockstep {
namespace {

#define EXPECT_HAS(text, part) \
  EXPECT_TRUE((text).find(part) != std::string::npos) << "missing \"" << (part) << "\" in: " << (text)

// A night of smoke "s": `uses` per metric (a for loss), the loss values'
// hash `loss_hash`, the commit, the stack's threads.
LedgerEntry night(int day, double loss_use, const std::string& loss_hash, const std::string& threads = "1",
                  const std::string& golden = std::string(32, 'g')) {
  LedgerEntry e;
  e.run_id = std::string(30, '0') + (day < 10 ? "0" : "") + std::to_string(day);
  e.time_utc = "2026-11-" + std::string(day < 10 ? "0" : "") + std::to_string(day) + "T02:00:00Z";
  e.smoke = "s";
  e.platform = "cpu-x86_64-avx2";
  e.commit = std::string(39, 'a') + std::to_string(day % 10);
  e.verdict = loss_use > 1 ? "fail" : "pass";
  e.exit_code = loss_use > 1 ? 1 : 0;
  e.lane = "cross-stack";
  e.golden = golden;
  e.fingerprint = {{"threads.intra_op", threads}, {"torch.version", "1.13.1"}};
  // `loss_hash` names the values: nights given one hash hold one curve (its
  // first character moves the last value), hashed as the ledger's writer does.
  LedgerSeries loss;
  loss.steps = {0, 1};
  loss.values = {2.5, 2.25 + static_cast<unsigned char>(loss_hash[0]) / 1024.0};
  loss.count = 2;
  Series curve;
  curve.values = loss.values;
  loss.xxh3 = series_content_hash(curve);
  loss.use = loss_use;
  loss.rule = "|a-g| <= 1e-06 + 0.0001*|g|";
  e.series["loss"] = loss;
  LedgerSeries grad = loss;
  grad.values = {2.5, 2.25};
  curve.values = grad.values;
  grad.xxh3 = series_content_hash(curve);
  grad.use = 0;
  e.series["grad_norm"] = grad;
  e.step_time_median_s = std::numeric_limits<double>::quiet_NaN();
  return e;
}

const MetricHistory& metric(const SmokeHistory& h, const std::string& name) {
  for (const auto& m : h.metrics)
    if (m.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

std::string hash(char c) { return std::string(32, c); }

// Night 2 ran on another stack (2 threads) and its values changed with it;
// night 3 was back on night 1's stack with night 1's values; from night 4
// the values moved on that same stack: the first change the stack does
// not explain, where the drift began.
TEST(History, ADriftFromNightFourIsItsFirstChangeWithWhatElseChanged) {
  std::vector<LedgerEntry> nights = {night(1, 0, hash('1')), night(2, 0.01, hash('2'), "2"), night(3, 0, hash('1')),
                                     night(4, 0.2, hash('4')), night(5, 0.3, hash('5')), night(6, 0.5, hash('6')),
                                     night(7, 0.8, hash('7'))};
  SmokeHistory h = analyse_history("s", "s.jsonl", nights);
  const MetricHistory& loss = metric(h, "loss");
  EXPECT_EQ(loss.trend, Trend::kDrifting);
  EXPECT_EQ(loss.trend_reason, "used 0, 0.2, 0.3, 0.5, 0.8 of its tolerance over the last 5 nights");
  EXPECT_EQ(loss.first_change, 3) << "night 4 (index 3)";
  EXPECT_EQ(metric(h, "grad_norm").trend, Trend::kSteady);
  EXPECT_EQ(metric(h, "grad_norm").first_change, -1);
  ASSERT_EQ(h.changes.size(), 6u);
  EXPECT_EQ(h.changes[0].night, 1u);
  EXPECT_EQ(h.changes[0].metrics, std::vector<std::string>{"loss"});
  EXPECT_TRUE(h.changes[0].unexplained.empty()) << "a stack not seen before explains it";
  EXPECT_EQ(h.changes[0].fingerprint, std::vector<std::string>{"threads.intra_op: 1 → 2"});
  EXPECT_TRUE(h.changes[1].unexplained.empty()) << "night 1's values on night 1's stack";
  EXPECT_EQ(h.changes[2].night, 3u);
  EXPECT_EQ(h.changes[2].unexplained, std::vector<std::string>{"loss"});
  EXPECT_EQ(h.changes[2].commits, "aaaaaaaaaaaa..aaaaaaaaaaaa");
  std::string text = render_history_text({h});
  EXPECT_HAS(text, "verdicts: steady (passed every night)");
  EXPECT_HAS(text, "loss      drifting          last 0.8 of tolerance; used 0, 0.2, 0.3, 0.5, 0.8 of its tolerance");
  EXPECT_HAS(text, "first changed on a stack seen before: night 4 (2026-11-04, commit aaaaaaaaaaaa); that night: "
                   "commits aaaaaaaaaaaa..aaaaaaaaaaaa");
  EXPECT_HAS(text, "night 2 (2026-11-02, commit aaaaaaaaaaaa): values of loss; stack: threads.intra_op: 1 → 2");
  EXPECT_HAS(text, "night 4 (2026-11-04, commit aaaaaaaaaaaa): values of loss (loss unlike the last night on this stack)");
}

// A config-only edit is an input change, not the stack's, and is named by
// its field when both nights kept their config; a line written before the
// config was kept still names the values hash as an input.
TEST(History, AConfigOnlyEditIsNamedAsAnInputByItsField) {
  std::vector<LedgerEntry> nights = {night(1, 0, hash('1')), night(2, 0.3, hash('2')), night(3, 0.3, hash('2'))};
  nights[0].config = {{"optimizer.lr", "0.05"}, {"steps", "10"}};
  nights[1].config = {{"optimizer.lr", "0.06"}, {"steps", "10"}};
  nights[2].config = nights[1].config;
  nights[0].fingerprint["config.values_xxh3"] = std::string(16, 'a');
  nights[1].fingerprint["config.values_xxh3"] = std::string(16, 'b');
  nights[2].fingerprint["config.values_xxh3"] = std::string(16, 'b');
  SmokeHistory h = analyse_history("s", "s.jsonl", nights);
  ASSERT_EQ(h.changes.size(), 1u);
  EXPECT_EQ(h.changes[0].inputs, std::vector<std::string>{"config optimizer.lr: 0.05 → 0.06"});
  EXPECT_TRUE(h.changes[0].fingerprint.empty());
  std::string text = render_history_text({h});
  EXPECT_HAS(text, "night 2 (2026-11-02, commit aaaaaaaaaaaa): values of loss; inputs: config optimizer.lr: 0.05 → "
                   "0.06; commits");
  EXPECT_EQ(text.find("stack: config"), std::string::npos) << text;
  EXPECT_HAS(render_history_html({h}), "input config optimizer.lr: 0.05 → 0.06");

  nights[0].config.clear();  // a line from before the config was kept
  h = analyse_history("s", "s.jsonl", nights);
  ASSERT_EQ(h.changes.size(), 1u);
  EXPECT_EQ(h.changes[0].inputs,
            std::vector<std::string>{"config.values_xxh3: aaaaaaaaaaaaaaaa → bbbbbbbbbbbbbbbb"});
}

// A ledger's config strings and CI variables are printed escaped: an ANSI
// escape or a line break in them never reaches the terminal or the log.
TEST(History, ControlCharactersOfALedgerLineArePrintedEscaped) {
  std::vector<LedgerEntry> nights = {night(1, 0, hash('1')), night(2, 0.3, hash('2')), night(3, 0.3, hash('2'))};
  nights[0].config = {{"model.name\x1b[2J", "a\nPASS"}};
  nights[1].config = {{"model.name\x1b[2J", "b"}};
  nights[2].config = nights[1].config;
  nights[0].ci.runner = "r1";
  nights[1].ci.runner = nights[2].ci.runner = "r2\x1b]0;owned\x07";
  SmokeHistory h = analyse_history("s", "s.jsonl", nights);
  ASSERT_EQ(h.changes.size(), 1u);
  EXPECT_EQ(h.changes[0].inputs, std::vector<std::string>{"config model.name\\x1b[2J: a\\x0aPASS → b"});
  EXPECT_EQ(h.changes[0].runner, "r1 → r2\\x1b]0;owned\\x07");
  std::string text = render_history_text({h});
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find("\nPASS"), std::string::npos) << text;
}

// A migration's two CI jobs write one ledger: the nights of each stack label
// are a history of their own, so neither stack reads as changing every
// night, and the label survives the ledger line.
TEST(History, EachStackLabelOfALedgerIsItsOwnHistory) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("lockstep-history-stacks-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string lines;
  for (int day = 1; day <= 6; ++day) {
    LedgerEntry e = night(day, 0.1, hash(day % 2 ? '1' : '2'), "1", hash('a'));
    if (day % 2 == 0) {
      e.stack = "torch2";
      e.fingerprint["torch.version"] = "2.6.0";
    }
    lines += ledger_line(e) + "\n";
  }
  write_file_atomically((dir / "s.jsonl").string(), lines);
  std::vector<SmokeHistory> h = load_history(dir.string(), "", false);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].stack, "");
  EXPECT_EQ(h[1].stack, "torch2");
  for (const auto& one : h) {
    EXPECT_EQ(one.entries.size(), 3u);
    EXPECT_TRUE(one.changes.empty()) << history_title(one) << ": " << one.changes.size() << " change points";
    EXPECT_EQ(metric(one, "loss").first_change, -1);
  }
  EXPECT_EQ(history_title(h[1]), "s (stack torch2)");
  std::string text = render_history_text(h);
  EXPECT_HAS(text, "history: s: 3 nights, 2026-11-01 .. 2026-11-05");
  EXPECT_HAS(text, "history: s (stack torch2): 3 nights, 2026-11-02 .. 2026-11-06");
  fs::remove_all(dir);
}

TEST(History, FailuresAtTheEndAreARegressionElsewhereSuspicious) {
  auto classify = [](std::vector<double> uses) {
    std::vector<LedgerEntry> nights;
    for (size_t i = 0; i < uses.size(); ++i) nights.push_back(night(static_cast<int>(i + 1), uses[i], hash('1')));
    return metric(analyse_history("s", "s.jsonl", nights), "loss");
  };
  EXPECT_EQ(classify({0.1, 0.1, 1.5, 2.0}).trend, Trend::kRegression);
  EXPECT_EQ(classify({0.1, 0.1, 1.5, 2.0}).trend_reason, "failed the last 2 nights in a row");
  EXPECT_EQ(classify({0.1, 1.5, 0.1, 0.1}).trend, Trend::kSuspicious);
  EXPECT_EQ(classify({0.1, 0.1, 0.1, 1.5}).trend, Trend::kSuspicious);
  EXPECT_EQ(classify({0.1, 0.1, 0.1, 1.5}).trend_reason, "1 failed night, the last one alone");
  EXPECT_EQ(classify({0.1, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()}).trend,
            Trend::kRegression);
  EXPECT_EQ(classify({0.5, 0.4, 0.6, 0.5}).trend, Trend::kSteady);
  EXPECT_EQ(classify({0.5, 0.6}).trend, Trend::kInsufficientData);
  EXPECT_EQ(classify({0.1, 0.2, 0.3}).trend, Trend::kDrifting) << "3 nights suffice";
  EXPECT_EQ(classify({0.1, 0.2, 0.2, 0.3, 0.4}).trend, Trend::kDrifting) << "a night that ties ends no drift";
  EXPECT_EQ(classify({0.2, 0.2, 0.2, 0.2, 0.3}).trend, Trend::kSteady) << "one rise is no drift";
  EXPECT_EQ(classify({0.1, 0.3, 0.2, 0.3, 0.4}).trend, Trend::kSteady) << "a fall ends it";
}

// Nights are in ledger order, not their clocks': a runner whose clock ran
// ahead (night 2 dated 2030) does not put its night last and hide the two
// failures after it as "not at the end".
TEST(History, NightsKeepLedgerOrderWhateverTheirClocksSay) {
  std::vector<LedgerEntry> nights = {night(1, 0.1, hash('1')), night(2, 0.1, hash('1')), night(3, 1.5, hash('2')),
                                     night(4, 2.0, hash('2'))};
  nights[1].time_utc = "2030-01-01T00:00:00Z";
  SmokeHistory h = analyse_history("s", "s.jsonl", nights);
  EXPECT_EQ(h.entries.back().run_id, nights.back().run_id);
  EXPECT_EQ(metric(h, "loss").trend, Trend::kRegression);
  EXPECT_EQ(metric(h, "loss").trend_reason, "failed the last 2 nights in a row");
  EXPECT_EQ(h.verdicts, Trend::kRegression);
}

// The plot's scale shows a drift at a hundredth of the tolerance and a
// night failing at 40 times it, neither clipped, with night numbers below.
TEST(History, ThePlotShowsSmallDriftsAndLargeFailuresWithNightNumbers) {
  std::vector<LedgerEntry> nights = {night(1, 0.01, hash('1')), night(2, 0.02, hash('2')), night(3, 0.03, hash('3')),
                                     night(4, 40, hash('4'))};
  std::string html = render_history_html({analyse_history("s", "s.jsonl", nights)});
  EXPECT_HAS(html, "font-size=\"9\">44</text>");  // the top: 1.1 x the largest use
  EXPECT_HAS(html, "text-anchor=\"middle\">1</text>");
  EXPECT_HAS(html, "text-anchor=\"middle\">4</text>");
  // Nights 1..3 at heights of their own (a drift not flattened to the
  // floor), night 4 near the top, not clipped at 1.5 with the tolerance line.
  EXPECT_HAS(html, "points=\"36,121.8 208,115.8 380,111.6 552,9.4 \"");
  EXPECT_HAS(html, "cy=\"9.4\" r=\"3\" class=\"f\"");
}

TEST(History, AReblessedGoldenIsNamedAndMarkedOnThePage) {
  std::vector<LedgerEntry> nights = {night(1, 0.1, hash('1')), night(2, 0.1, hash('1')),
                                     night(3, 0.1, hash('1'), "1", std::string(32, 'f'))};
  nights[2].ci.report_url = "https://gitlab.example/-/jobs/3/artifacts/report.html";
  SmokeHistory h = analyse_history("s", "s.jsonl", nights);
  ASSERT_EQ(h.changes.size(), 1u);
  EXPECT_TRUE(h.changes[0].golden_changed);
  std::string html = render_history_html({h});
  EXPECT_HAS(html, "<td>re-blessed</td>");
  EXPECT_HAS(html, "<a href=\"https://gitlab.example/-/jobs/3/artifacts/report.html\">report</a>");
  EXPECT_HAS(html, "<title>night 3 2026-11-03 aaaaaaaaaa pass: 0.1 of its tolerance</title>");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  std::string json = render_history_json({h});
  EXPECT_HAS(json, "\"lockstep_report\": \"history\"");
  EXPECT_HAS(json, "\"golden_changed\": true");
  // A link the page would run is no link: http(s) only.
  nights[2].ci.report_url = "JavaScript:alert(1)";
  nights[2].ci.job_url = "data:text/html,x";
  html = render_history_html({analyse_history("s", "s.jsonl", nights)});
  EXPECT_EQ(html.find("href=\"JavaScript"), std::string::npos);
  EXPECT_EQ(html.find("href=\"data:"), std::string::npos);
  EXPECT_EQ(html.find(">report</a>"), std::string::npos);
}

}  // namespace
}  // namespace lockstep

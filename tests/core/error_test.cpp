// What a message does with the input it quotes, and what counts as saying
// nothing (core/error.h).
#include "core/error.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

// A required reason made only of spaces, Unicode white space, zero-width
// characters or bidirectional controls says nothing.
TEST(IsBlankText, WhitespaceZeroWidthAndBidiControlsAreBlank) {
  EXPECT_TRUE(is_blank_text(""));
  EXPECT_TRUE(is_blank_text(" \t\r\n\v\f"));
  EXPECT_TRUE(is_blank_text("\xc2\xa0"));          // U+00A0 NO-BREAK SPACE
  EXPECT_TRUE(is_blank_text("\xe3\x80\x80"));      // U+3000 IDEOGRAPHIC SPACE
  EXPECT_TRUE(is_blank_text("\xe2\x80\x8b\xef\xbb\xbf"));  // ZERO WIDTH SPACE, BOM
  EXPECT_TRUE(is_blank_text("\xe2\x80\xae \xe2\x81\xa6"));  // RLO, LRI
  EXPECT_FALSE(is_blank_text("x"));
  EXPECT_FALSE(is_blank_text("\xc2\xa0" "cuDNN 9 upgrade"));
  EXPECT_FALSE(is_blank_text("\xc3\xa9"));          // é
  EXPECT_FALSE(is_blank_text("\xe2\x80\x93"));      // EN DASH shows
  EXPECT_FALSE(is_blank_text(std::string("\0", 1)));
  EXPECT_FALSE(is_blank_text("\xff"));              // not UTF-8: not blank
}

}  // namespace
}  // namespace lockstep

namespace lockstep {
namespace {

// A message stays one line whatever the input held: C0 controls as \xNN,
// C1 controls (NEL, a terminal's CSI) and the Unicode line and paragraph
// separators as \u escapes (\u0085, \u2028); other UTF-8 is kept.
TEST(PrintableMessage, LineBreakingAndSteeringCharactersAreShown) {
  EXPECT_EQ(printable_message("a\nb", false), "a\\x0ab");
  EXPECT_EQ(printable_message("k\xc2\x85" "k \xc2\x9b" "2J \xe2\x80\xa8 \xe2\x80\xa9"), "k\\u0085k \\u009b2J \\u2028 \\u2029");
  EXPECT_EQ(printable_message("caf\xc3\xa9 \xe2\x86\x92"), "caf\xc3\xa9 \xe2\x86\x92");
}

}  // namespace
}  // namespace lockstep

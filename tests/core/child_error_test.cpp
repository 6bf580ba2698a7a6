#include "core/child_error.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(ChildErrorReader, KeepsTheLastErrorWithItsQuotedLines) {
  ChildErrorReader err;
  for (const char* line : {"run digits-cnn: 10 steps", "lockstep: error: first", "  | old quote", "note: x",
                           "lockstep: error: rank 1 of 2 was killed", "  | Traceback", "  | ValueError: bad",
                           "after the block"})
    err.feed(line);
  EXPECT_EQ(err.reason(), "rank 1 of 2 was killed\n  | Traceback\n  | ValueError: bad");
}

TEST(ChildErrorReader, NoErrorLineIsEmptyAndAStrayQuoteIsIgnored) {
  ChildErrorReader err;
  err.feed("  | quoted without an error");
  err.feed("done");
  EXPECT_EQ(err.reason(), "");
}

}  // namespace
}  // namespace lockstep

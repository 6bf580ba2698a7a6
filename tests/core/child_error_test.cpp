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

TEST(ChildErrorReader, WithoutAnErrorLineTheLastNonBlankLineIsTheReason) {
  ChildErrorReader silent;
  EXPECT_EQ(silent.reason_or_last_line(), "(no error message)");
  ChildErrorReader loader;
  for (const char* line : {"lockstep-torch: libcudnn.so.9: no version information available",
                           "lockstep-torch: symbol lookup error: libtorch_cuda.so.2.6: undefined symbol: cudnnGetVersion",
                           "  "})
    loader.feed(line);
  EXPECT_EQ(loader.reason_or_last_line(), "(no lockstep error line; its output ends: lockstep-torch: symbol lookup "
                                          "error: libtorch_cuda.so.2.6: undefined symbol: cudnnGetVersion)");
  ChildErrorReader both;
  for (const char* line : {"lockstep: error: bad", "after"}) both.feed(line);
  EXPECT_EQ(both.reason_or_last_line(), "bad");
}

}  // namespace
}  // namespace lockstep

// The progress display's text, from samples at times and widths the tests choose.

#include "cli/progress_bar.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "support/units.hpp"

namespace tensorstream::cli {
namespace {

using testing::KiB;
using testing::MiB;
using Clock = ProgressRenderer::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::uint64_t GiB = 1024 * MiB;

const Clock::time_point start{};

// The bar after one sample, `done` of `total` bytes one second into the transfer.
std::string bar_after_one_second(std::uint64_t done, std::uint64_t total, int columns,
                                 const std::string& detail = "") {
  ProgressRenderer renderer(ProgressStyle::bar, start);
  return renderer.update({done, total, detail}, start + seconds(1), columns);
}

TEST(ProgressBar, AtOneHundredTwentyColumnsShowsEveryField) {
  EXPECT_EQ(bar_after_one_second(512 * MiB, 2 * GiB, 120, "3/7 tensors"),
            "\r[#######.......................]  512.0 MiB / 2.0 GiB  25%  512.0 MiB/s  ETA 3s  "
            "3/7 tensors\033[K");
}

TEST(ProgressBar, AtSixtyColumnsDropsTheDetailAndNarrowsTheBar) {
  const std::string line = bar_after_one_second(512 * MiB, 2 * GiB, 60, "3/7 tensors");
  EXPECT_EQ(line, "\r[##........]  512.0 MiB / 2.0 GiB  25%  512.0 MiB/s  ETA 3s\033[K");
  // "\r" and "\033[K" take no columns; the last column stays empty so the line never wraps.
  EXPECT_EQ(line.size() - 1 - 3, 59u);
}

TEST(ProgressBar, NarrowerTerminalsLoseTheBarThenTheTimeLeftThenTheRate) {
  EXPECT_EQ(bar_after_one_second(512 * MiB, 2 * GiB, 50),
            "\r512.0 MiB / 2.0 GiB  25%  512.0 MiB/s  ETA 3s\033[K");
  EXPECT_EQ(bar_after_one_second(512 * MiB, 2 * GiB, 40), "\r512.0 MiB / 2.0 GiB  25%  512.0 MiB/s\033[K");
  EXPECT_EQ(bar_after_one_second(512 * MiB, 2 * GiB, 30), "\r512.0 MiB / 2.0 GiB  25%\033[K");
  EXPECT_EQ(bar_after_one_second(512 * MiB, 2 * GiB, 12), "\r512.0 MiB /\033[K");
}

TEST(ProgressBar, RatesScaleThroughBinaryUnits) {
  EXPECT_EQ(bar_after_one_second(512, 0, 80), "\r512 B  512 B/s\033[K");
  EXPECT_EQ(bar_after_one_second(1536, 0, 80), "\r1.5 KiB  1.5 KiB/s\033[K");
  EXPECT_EQ(bar_after_one_second(3 * MiB, 0, 80), "\r3.0 MiB  3.0 MiB/s\033[K");
  EXPECT_EQ(bar_after_one_second(3 * GiB, 0, 80), "\r3.0 GiB  3.0 GiB/s\033[K");
}

TEST(ProgressBar, TimesLeftReadAsSecondsMinutesOrHours) {
  EXPECT_EQ(bar_after_one_second(MiB, 188 * MiB, 80),
            "\r[..............................]  1.0 MiB / 188.0 MiB  0%  1.0 MiB/s  ETA 3m07s"
            "\033[K");
  EXPECT_EQ(bar_after_one_second(MiB, 7501 * MiB, 80),
            "\r[..............................]  1.0 MiB / 7.3 GiB  0%  1.0 MiB/s  ETA 2h05m\033[K");
}

// At 72 KiB a second, 32 GiB would take 129 hours: no estimate worth showing.
TEST(ProgressBar, TheTimeLeftIsUnknownRatherThanAbsurd) {
  EXPECT_EQ(bar_after_one_second(72 * KiB, 32 * GiB, 80),
            "\r[..............................]  72.0 KiB / 32.0 GiB  0%  72.0 KiB/s  ETA --\033[K");
  // Nor is there a rate before time has passed.
  ProgressRenderer renderer(ProgressStyle::bar, start);
  EXPECT_EQ(renderer.update({0, 8 * GiB, {}}, start, 80),
            "\r[..............................]  0 B / 8.0 GiB  0%  -- B/s  ETA --\033[K");
}

TEST(ProgressBar, TheRateIsThatOfTheLastFiveSeconds) {
  ProgressRenderer renderer(ProgressStyle::plain, start);
  // Nothing for five seconds, then 100 MiB a second.
  std::string lines;
  for (int second = 1; second <= 10; ++second) {
    const std::uint64_t done = second <= 5 ? 0 : (second - 5) * 100 * MiB;
    lines += renderer.update({done, 1000 * MiB, "0/7 tensors"}, start + seconds(second), 80);
  }
  EXPECT_EQ(lines,
            "tensorstream: 0 B / 1000.0 MiB (0%), 0 B/s, ETA --, 0/7 tensors\n"
            "tensorstream: 500.0 MiB / 1000.0 MiB (50%), 100.0 MiB/s, ETA 5s, 0/7 tensors\n");
}

TEST(ProgressBar, PlainLinesComeEveryFiveSecondsWithoutEscapes) {
  ProgressRenderer renderer(ProgressStyle::plain, start);
  EXPECT_EQ(renderer.update({MiB, 0, {}}, start + milliseconds(4999), 80), "");
  EXPECT_EQ(renderer.update({2 * MiB, 0, {}}, start + milliseconds(5000), 80),
            "tensorstream: 2.0 MiB, 409.6 KiB/s\n");
  EXPECT_EQ(renderer.update({3 * MiB, 0, {}}, start + milliseconds(9999), 80), "");
  EXPECT_EQ(renderer.update({4 * MiB, 0, {}}, start + milliseconds(10000), 80),
            "tensorstream: 4.0 MiB, 409.6 KiB/s\n");
  EXPECT_EQ(renderer.finish({5 * MiB, 5 * MiB, "1/1 tensors"}, start + seconds(20), 80, true),
            "tensorstream: 5.0 MiB in 20.0 s, average 256.0 KiB/s, 1/1 tensors\n");
}

TEST(ProgressBar, AWaitForAServerTakesThePlaceOfTheRateOnceItLastsTwoSeconds) {
  const std::string server = "a response from 127.0.0.1:8080";
  ProgressRenderer plain(ProgressStyle::plain, start);
  EXPECT_EQ(plain.update({0, 0, {}, server, 12.7}, start + seconds(5), 80),
            "tensorstream: 0 B, waiting for a response from 127.0.0.1:8080 (12 s)\n");
  EXPECT_EQ(plain.update({MiB, 4 * MiB, "1/7 tensors", server, 3}, start + seconds(10), 80),
            "tensorstream: 1.0 MiB / 4.0 MiB (25%), waiting for a response from 127.0.0.1:8080 "
            "(3 s), 1/7 tensors\n");
  // Shorter waits are requests on their normal way: the rate shows.
  EXPECT_EQ(plain.update({2 * MiB, 4 * MiB, {}, server, 1.9}, start + seconds(15), 80),
            "tensorstream: 2.0 MiB / 4.0 MiB (50%), 204.8 KiB/s, ETA 10s\n");

  ProgressRenderer bar(ProgressStyle::bar, start);
  EXPECT_EQ(bar.update({0, 0, {}, server, 2}, start + seconds(2), 80),
            "\r0 B  waiting for a response from 127.0.0.1:8080 (2 s)\033[K");
}

TEST(ProgressBar, AQuickRunLeavesNoPlainLine) {
  ProgressRenderer renderer(ProgressStyle::plain, start);
  EXPECT_EQ(renderer.update({MiB, MiB, {}}, start + seconds(1), 80), "");
  EXPECT_EQ(renderer.finish({MiB, MiB, {}}, start + seconds(1), 80, true), "");
}

TEST(ProgressBar, TheFinalLineGivesTheTotalAndTheAverageRate) {
  ProgressRenderer renderer(ProgressStyle::bar, start);
  renderer.update({GiB, 2 * GiB, "3/7 tensors"}, start + seconds(1), 120);
  EXPECT_EQ(renderer.finish({2 * GiB, 2 * GiB, "7/7 tensors"}, start + seconds(4), 120, true),
            "\rtensorstream: 2.0 GiB in 4.0 s, average 512.0 MiB/s, 7/7 tensors\033[K\n");
}

TEST(ProgressBar, TheFinalLineFitsSixtyColumns) {
  ProgressRenderer renderer(ProgressStyle::bar, start);
  EXPECT_EQ(renderer.finish({1000 * MiB, 1000 * MiB, "100/100 tensors"}, start + seconds(3), 60,
                            true),
            "\rtensorstream: 1000.0 MiB in 3.0 s, average 333.3 MiB/s\033[K\n");
}

TEST(ProgressBar, TheFinalLineKeepsItsTotalsOnANarrowTerminal) {
  ProgressRenderer renderer(ProgressStyle::bar, start);
  EXPECT_EQ(renderer.finish({1000 * MiB, 1000 * MiB, "100/100 tensors"}, start + seconds(3), 40,
                            true),
            "\rtensorstream: 1000.0 MiB in 3.0 s, average 333.3 MiB/s\033[K\n");
}

TEST(ProgressBar, AFailureErasesTheBarForTheErrorMessage) {
  ProgressRenderer drawn(ProgressStyle::bar, start);
  drawn.update({MiB, 2 * MiB, {}}, start + seconds(1), 80);
  EXPECT_EQ(drawn.finish({MiB, 2 * MiB, {}}, start + seconds(2), 80, false), "\r\033[K");

  ProgressRenderer never_drawn(ProgressStyle::bar, start);
  EXPECT_EQ(never_drawn.finish({0, 0, {}}, start, 80, false), "");

  ProgressRenderer plain(ProgressStyle::plain, start);
  plain.update({MiB, 2 * MiB, {}}, start + seconds(5), 80);
  EXPECT_EQ(plain.finish({MiB, 2 * MiB, {}}, start + seconds(6), 80, false), "");
}

}  // namespace
}  // namespace tensorstream::cli

// Retry-After, as throttled servers (the Hub's 429s, S3's and Azure's 503s) send it.

#include "storage/http/backoff.hpp"

#include <gtest/gtest.h>

namespace tensorstream::backoff_test {

using std::chrono::milliseconds;
using std::chrono::seconds;

boost::beast::http::fields retry_after_header(const std::string& value) {
  boost::beast::http::fields fields;
  fields.set(boost::beast::http::field::retry_after, value);
  return fields;
}

// 1994-11-06T08:49:37Z, the date of RFC 9110's examples.
const auto example_now = std::chrono::system_clock::from_time_t(784111777);

TEST(RetryAfter, ReadsDelaySecondsAndDatesAndCapsThem) {
  EXPECT_EQ(retry_after(retry_after_header("7"), example_now), milliseconds(7000));
  EXPECT_EQ(retry_after(retry_after_header("0"), example_now), milliseconds(0));
  EXPECT_EQ(retry_after(retry_after_header("Sun, 06 Nov 1994 08:50:07 GMT"), example_now),
            milliseconds(30'000));
  // A date already past asks for no pause.
  EXPECT_EQ(retry_after(retry_after_header("Sun, 06 Nov 1994 08:49:00 GMT"), example_now),
            milliseconds(0));
  EXPECT_EQ(retry_after(retry_after_header("86400"), example_now), max_retry_after);
}

TEST(RetryAfter, IgnoresWhatIsNoDelay) {
  EXPECT_EQ(retry_after({}, example_now), std::nullopt);
  EXPECT_EQ(retry_after(retry_after_header("-3"), example_now), std::nullopt);
  EXPECT_EQ(retry_after(retry_after_header("soon"), example_now), std::nullopt);
  EXPECT_EQ(retry_after(retry_after_header("Sun, 06 Nov 1994 08:50:07 PST"), example_now),
            std::nullopt);
}

}  // namespace tensorstream::backoff_test

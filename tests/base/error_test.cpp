// Every exception class says its kind, and every kind has one name that reads back as it: the
// store server's protocol and the Python package go by them.

#include "tensorstream/error.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "support/print_error_kind.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream {
namespace {

constexpr ErrorKind every_kind[] = {
    ErrorKind::other,       ErrorKind::invalid_argument, ErrorKind::format,
    ErrorKind::storage,     ErrorKind::not_found,        ErrorKind::access_denied,
    ErrorKind::credentials, ErrorKind::state,            ErrorKind::cancelled,
    ErrorKind::deadline_exceeded};

TEST(ErrorKind, EveryKindHasANameOfItsOwnThatReadsBack) {
  std::set<std::string> names;
  for (const ErrorKind kind : every_kind) {
    const std::string name(error_kind_name(kind));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(error_kind_from_name(name), kind) << name;
  }
  EXPECT_EQ(error_kind_name(ErrorKind::other), "error");
  EXPECT_EQ(error_kind_name(ErrorKind::access_denied), "access_denied");
  EXPECT_EQ(error_kind_from_name("permission_denied"), ErrorKind::other);
  EXPECT_EQ(error_kind_from_name(""), ErrorKind::other);
}

TEST(ErrorKind, EachExceptionSaysItsKind) {
  EXPECT_EQ(Error("x").kind(), ErrorKind::other);
  EXPECT_EQ(InvalidArgument("x").kind(), ErrorKind::invalid_argument);
  EXPECT_EQ(FormatError("x").kind(), ErrorKind::format);
  EXPECT_EQ(StorageError("s3://b/k", "HTTP 500").kind(), ErrorKind::storage);
  EXPECT_EQ(StorageError("s3://b/k", "HTTP 403", false, ErrorKind::access_denied).kind(),
            ErrorKind::access_denied);
  EXPECT_EQ(NotFoundError("s3://b/k", "HTTP 404").kind(), ErrorKind::not_found);
  EXPECT_EQ(CredentialsError("AWS", "environment", "not set", false).kind(),
            ErrorKind::credentials);
  EXPECT_EQ(StateError("x").kind(), ErrorKind::state);
  EXPECT_EQ(Cancelled("x").kind(), ErrorKind::cancelled);
  EXPECT_EQ(DeadlineExceeded("x").kind(), ErrorKind::deadline_exceeded);
}

}  // namespace
}  // namespace tensorstream

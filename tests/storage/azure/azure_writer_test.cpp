// Put Block List whose answer is lost: the blob's committed block list decides whether the
// commit went through.

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>

#include "storage/azurite_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/logged_messages.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/sha256.hpp"
#include "support/units.hpp"
#include "support/write_all.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/azure/default_credentials.hpp"
#include "tensorstream/storage/azure_store.hpp"

namespace tensorstream {
namespace {

using testing::AzuriteServer;
using testing::FaultProxy;
using testing::MiB;
using testing::random_bytes;

const std::string internal_error_body =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>InternalError</Code><Message>Server "
    "encountered an internal error. Please try again after some time.</Message></Error>";
// The cause Azure's 500 InternalError gives after ten attempts.
const std::string refused_ten_times =
    "InternalError: Server encountered an internal error. Please try again after some time. "
    "(HTTP 500) (after 10 attempts)";
const std::string internal_error =
    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: " +
    std::to_string(internal_error_body.size()) + "\r\n\r\n" + internal_error_body;

bool is_block_list(const std::string& method, const std::string& target) {
  return method == "PUT" && target.ends_with("?comp=blocklist");
}

class AzureWriterTest : public azure::testing::AzuriteTest {
 protected:
  // A store of the test's container through `proxy`, waiting 2 s for a response header (so 12 s
  // for Put Block List's): under TSan a 5 MiB block's answer through the proxy from Azurite
  // takes longer than 500 ms.
  AzureStore store(const FaultProxy& proxy) {
    HttpOptions http;
    http.response_timeout = std::chrono::seconds(2);
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    AzureOptions options;
    options.endpoint = proxy.endpoint() + "/" + AzuriteServer::account_name;
    options.credentials = azure::fixed_credentials(
        {azure::Credentials::Kind::shared_key, AzuriteServer::account_key}, "test key");
    return AzureStore(io_.get_executor(), Url::parse("az://" + container() + "/"), http,
                      std::move(options));
  }

  // Put Block List requests after the first, answered 500 by the proxy.
  std::string refuse_later_block_lists(const std::string& method, const std::string& target) {
    if (is_block_list(method, target) && block_lists_++ > 0) return internal_error;
    return {};
  }

  boost::asio::io_context io_;
  std::atomic<int> block_lists_{0};
};

TEST_F(AzureWriterTest, APutBlockListWhoseAnswerIsLostIsDoneWhenTheBlobHasItsBlocks) {
  FaultProxy proxy(azurite().port(),
                   {.answer = [this](const std::string& method, const std::string& target) {
                      return refuse_later_block_lists(method, target);
                    },
                    .lose_answer = is_block_list});
  auto azure = store(proxy);
  const std::string content = random_bytes(12 * MiB + 3, 21);
  testing::LoggedMessages warnings(LogLevel::warning);
  auto writer = azure.create_writer("/lost.bin", {.single_put_limit = 5 * MiB,
                                                  .part_size = 5 * MiB});
  testing::run_task(io_, testing::write_all(*writer, content, 1 * MiB));
  EXPECT_EQ(azurite().blob_sha256(container(), "lost.bin"),
            testing::sha256_hex(std::as_bytes(std::span(content))));
  EXPECT_EQ(block_lists_, 10);  // The lost one and nine refused.
  const auto messages = warnings.messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back(),
            "az://" + container() + "/lost.bin: " + refused_ten_times +
                "; but the object is complete (12582915 bytes, committed from this upload's 3 "
                "blocks): the store completed it and its answer was lost");
}

TEST_F(AzureWriterTest, APutBlockListThatFailsForGoodFailsTheCommit) {
  FaultProxy proxy(azurite().port(),
                   {.answer = [](const std::string& method, const std::string& target) {
                     return is_block_list(method, target) ? internal_error : std::string();
                   }});
  auto azure = store(proxy);
  auto writer = azure.create_writer("/failed.bin", {.single_put_limit = 5 * MiB,
                                                    .part_size = 5 * MiB});
  const std::string content = random_bytes(12 * MiB, 22);
  try {
    testing::run_task(io_, testing::write_all(*writer, content, 1 * MiB));
    FAIL() << "the commit succeeded";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "az://" + container() + "/failed.bin: " + refused_ten_times);
  }
}

}  // namespace
}  // namespace tensorstream

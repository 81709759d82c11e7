// The HTTP client's flags, which every command that reads storage takes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/certificates.hpp"
#include "support/fault_server.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::Certificates;
using testing::FaultServer;
using testing::NginxServer;
using testing::run_cli;
using testing::sorted_tensor_lines;
using testing::TempDir;

TEST(CliHttpFlags, EveryStorageCommandTakesThem) {
  for (const std::string command : {"stream", "inspect", "ls", "prefetch", "shard"}) {
    const auto result = run_cli({command, "--help"});
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    for (const std::string flag :
         {"--retries", "--connect-timeout", "--response-timeout", "--read-timeout", "--insecure"}) {
      EXPECT_NE(result.out.find(flag), std::string::npos) << command << " lacks " << flag;
    }
    // The old name of --read-timeout still works, but is no longer taught.
    EXPECT_EQ(result.out.find("--timeout"), std::string::npos) << command;
  }
}

TEST(CliHttpFlags, RetriesSetTheNumberOfAttempts) {
  FaultServer server("/model.safetensors", "x",
                     {.fail_first = FaultServer::always, .fail_status = 500});
  const auto result =
      run_cli({"stream", server.base_url() + "/model.safetensors", "--retries", "2"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("HTTP 500 Internal Server Error (after 3 attempts)"), std::string::npos)
      << result.err;
  EXPECT_EQ(server.requests(), 3);
}

TEST(CliHttpFlags, ReadTimeoutBoundsAStalledBody) {
  FaultServer server("/model.safetensors", std::string(1000, 'x'), {.stall = true});
  const auto result = run_cli({"stream", server.base_url() + "/model.safetensors", "--retries",
                               "0", "--read-timeout", "0.05"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no data for 50 ms"), std::string::npos) << result.err;
}

TEST(CliHttpFlags, ResponseTimeoutBoundsTheWaitForAServerThatNeverAnswers) {
  FaultServer server("/model.safetensors", std::string(1000, 'x'), {.silent_from_request = 0});
  const std::string url = server.base_url() + "/model.safetensors";
  const auto result = run_cli({"stream", url, "--retries", "0", "--response-timeout", "0.05"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "tensorstream: error: " + url + ": no response for 50 ms (after 1 attempt)\n");
}

TEST(CliHttpFlags, TheOldTimeoutNameWorksWithAWarningAndNotWithTheNewOne) {
  FaultServer server("/model.safetensors", std::string(1000, 'x'), {.stall = true});
  const std::string url = server.base_url() + "/model.safetensors";
  auto result = run_cli({"stream", url, "--retries", "0", "--timeout", "0.05"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("tensorstream: warning: --timeout is now --read-timeout; the old name "
                            "will go\n"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("no data for 50 ms"), std::string::npos) << result.err;

  result = run_cli({"stream", url, "--timeout", "1", "--read-timeout", "1"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: --timeout and --read-timeout: give one\n");
}

TEST(CliHttpFlags, NegativeRetriesAreRejected) {
  const auto result = run_cli({"stream", "http://127.0.0.1:1/m.safetensors", "--retries", "-1"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--retries"), std::string::npos) << result.err;
}

// nginx over TLS with a certificate of a CA made for the test, which no system store trusts.
TEST(CliHttpFlags, InsecureSkipsCertificateChecksAndSaysSo) {
  if (!NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  if (!Certificates::available()) TENSORSTREAM_SKIP_UNLESS_CI("openssl is not installed");
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny"});
  TempDir pki;
  const Certificates certificates = Certificates::generate(pki.path());
  NginxServer nginx({.root = model.path(),
                     .certificate = certificates.server_certificate,
                     .key = certificates.server_key});
  testing::ScopedEnvironment environment({"SSL_CERT_FILE", "SSL_CERT_DIR", "https_proxy",
                                          "HTTPS_PROXY"});
  const std::string url = nginx.base_url() + "/model.safetensors";

  const auto refused = run_cli({"stream", url, "--retries", "0"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(url + ": TLS handshake failed: certificate verify failed"),
            std::string::npos)
      << refused.err;

  const auto insecure = run_cli({"stream", url, "--insecure", "--json", "--checksum", "sha256"});
  ASSERT_EQ(insecure.exit_code, 0) << insecure.err;
  EXPECT_EQ(insecure.err, "tensorstream: warning: --insecure: TLS certificates are not verified\n");
  const auto local = run_cli({"stream", (model.path() / "model.safetensors").string(), "--json",
                              "--checksum", "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(sorted_tensor_lines(insecure.out), sorted_tensor_lines(local.out));
  EXPECT_FALSE(sorted_tensor_lines(local.out).empty());
}

}  // namespace
}  // namespace tensorstream

#include "support/signature_verifier.hpp"

#include <sys/wait.h>

#include <stdexcept>

namespace tensorstream::testing {
namespace {

// Debian's interpreter, which python3-botocore is installed for.
constexpr const char* python = "/usr/bin/python3";
const std::filesystem::path script = TENSORSTREAM_SIGNATURE_VERIFIER_SCRIPT;

int count_of(const std::string& json, const std::string& name) {
  const auto at = json.find("\"" + name + "\": ");
  if (at == std::string::npos) throw std::runtime_error("no " + name + " in " + json);
  return std::stoi(json.substr(at + name.size() + 4));
}

}  // namespace

std::optional<std::string> SignatureVerifier::unavailable() {
  TempDir scratch;
  ChildProcess probe({python, "-c", "import botocore.auth"}, scratch.path() / "probe.log");
  const int status = probe.wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::string(python) + " cannot import botocore (scripts/setup.sh installs "
                                 "python3-botocore)";
  }
  return std::nullopt;
}

SignatureVerifier::SignatureVerifier(
    std::uint16_t upstream_port, const std::vector<std::pair<std::string, std::string>>& keys) {
  std::vector<std::string> argv{python, script.string(), std::to_string(upstream_port)};
  for (const auto& [id, secret] : keys) argv.push_back(id + ":" + secret);
  process_ = std::make_unique<ChildProcess>(argv, directory_.path() / "verifier.log");
  port_ = wait_for_announced_port(*process_, directory_.path() / "verifier.log", "listening on ");
}

SignatureVerifier::~SignatureVerifier() {
  if (process_) process_->stop();
}

std::string SignatureVerifier::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

SignatureVerifier::Counts SignatureVerifier::counts() const {
  const auto output = directory_.path() / "stats.json";
  run_command({"curl", "-sSf", "-o", output.string(), endpoint() + "/__verifier__/stats"},
              directory_.path() / "stats.log");
  const std::string json = read_text_file(output);
  return Counts{count_of(json, "verified"), count_of(json, "rejected"),
                count_of(json, "unsigned")};
}

std::string SignatureVerifier::log() const {
  return read_text_file(directory_.path() / "verifier.log");
}

}  // namespace tensorstream::testing

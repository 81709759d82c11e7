// The Python worker docs/spec/store-protocol.md gives for the store server protocol, run against
// the server.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "store/server_fixture.hpp"
#include "support/child_process.hpp"
#include "support/skip.hpp"

namespace tensorstream::store::testing {
namespace {

// The first ```python block after the protocol's worker heading.
std::string documented_worker() {
  const std::string doc = tensorstream::testing::read_text_file(TENSORSTREAM_STORE_PROTOCOL_DOC);
  const auto section = doc.find("## A worker in Python");
  const auto start = doc.find("```python\n", section);
  const auto end = doc.find("```\n", start + 10);
  if (section == std::string::npos || start == std::string::npos || end == std::string::npos) {
    throw std::runtime_error(
        "docs/spec/store-protocol.md has no Python worker under \"A worker in Python\"");
  }
  return doc.substr(start + 10, end - start - 10);
}

TEST_F(StoreServerTest, DocumentedPythonWorkerAttaches) {
  const auto python = tensorstream::testing::find_program("python3");
  if (!python) TENSORSTREAM_SKIP_UNLESS_CI("python3 is not installed");
  start();
  const auto script = dir_.path() / "worker.py";
  std::ofstream(script) << documented_worker() << R"(
import sys
reply, maps = attach(sys.argv[1], 1)
print(reply["rank"], [(r["name"], r["bytes"], r["writable"]) for r in reply["regions"]])
print(bytes(maps["weights"][:16]), bytes(maps["kv_cache"][:16]))
maps["kv_cache"][:6] = b"python"
try:
    attach(sys.argv[1], 9)
except RuntimeError as error:
    print(error)
)";
  const auto log = dir_.path() / "worker.log";
  tensorstream::testing::run_command({python->string(), script.string(), socket_path_.string()},
                                     log);
  EXPECT_EQ(tensorstream::testing::read_text_file(log),
            "1 [('weights', " + std::to_string(weights(1).size()) + ", False), ('kv_cache', " +
                std::to_string(kv_cache(1).size()) + ", True)]\n" +
                "b'weights of rank ' b'kv cache of rank'\n" + socket_path_.string() +
                ": rank 9 is not served\n");
  EXPECT_EQ(mapped_content(regions_[1][1].get()), "python" + kv_cache(1).substr(6));
}

}  // namespace
}  // namespace tensorstream::store::testing

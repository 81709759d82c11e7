// tensorstream's TRAW reader and writer against tests/traw/traw_spec.py, a writer and checker
// written from the seed's specification with Python's struct module alone: the seed's own writer
// packs the same fields the same way, so agreeing with the script is agreeing with the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/every_dtype.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/random_bytes.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/safetensors/dtype.hpp"
#include "tensorstream/traw/format.hpp"

namespace tensorstream::traw {
namespace {

namespace fs = std::filesystem;

using testing::read_file;
using testing::write_file;
const fs::path kScript = TENSORSTREAM_TRAW_SPEC_SCRIPT;

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Tensor bytes for `dtype` in shape [3, 5], different for each dtype.
std::string tensor_data(Dtype dtype) {
  return testing::random_bytes(15 * element_size(dtype), static_cast<unsigned>(dtype_code(dtype)));
}

class TrawSpecScript : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = testing::find_program("python3");
    if (!python_) TENSORSTREAM_SKIP_UNLESS_CI("python3 is not installed");
  }

  testing::ProcessResult run_script(std::vector<std::string> arguments) const {
    arguments.insert(arguments.begin(), {python_->string(), kScript.string()});
    return testing::run_process(arguments);
  }

  std::optional<fs::path> python_;
  testing::TempDir dir_;
};

TEST_F(TrawSpecScript, WeReadWhatTheSpecWriterWrites) {
  const std::vector<std::uint64_t> shape{3, 5};
  for (const auto dtype : testing::every_dtype) {
    const auto name = std::string(dtype_name(dtype));
    const auto data = tensor_data(dtype);
    write_file(dir_.path() / "data", data);
    const auto file = dir_.path() / (name + ".bin");
    const auto written = run_script({"write", file.string(), std::to_string(dtype_code(dtype)),
                                     "3,5", (dir_.path() / "data").string()});
    ASSERT_EQ(written.exit_code, 0) << written.err;

    const auto object = read_file(file);
    const auto* bytes = reinterpret_cast<const std::byte*>(object.data());
    const std::span<const std::byte> prefix(bytes, std::min(object.size(), max_header_size));
    const auto header = parse_header(prefix, object.size(), file.string());
    EXPECT_EQ(header, (Header{shape, dtype, data.size()})) << name;
    EXPECT_EQ(object.substr(header.header_size()), data) << name;
    // Our writer produces the very same file.
    EXPECT_EQ(as_string(encode_header(shape, dtype)) + data, object) << name;
  }
}

TEST_F(TrawSpecScript, TheSpecCheckerAcceptsWhatWeWrite) {
  const std::vector<std::uint64_t> shape{3, 5};
  for (const auto dtype : testing::every_dtype) {
    const auto data = tensor_data(dtype);
    const auto file = dir_.path() / (std::string(dtype_name(dtype)) + ".bin");
    write_file(file, as_string(encode_header(shape, dtype)) + data);
    const auto verified = run_script({"verify", file.string()});
    EXPECT_EQ(verified.exit_code, 0) << verified.err;
    EXPECT_EQ(verified.out, "shape=3,5 dtype_code=" + std::to_string(dtype_code(dtype)) +
                                " data_size=" + std::to_string(data.size()) + "\n");
  }
}

TEST_F(TrawSpecScript, TheSpecCheckerRejectsAFileWithABytePastItsData) {
  // Shows that the checker checks: the same file it accepts above, one byte longer.
  const std::vector<std::uint64_t> shape{3, 5};
  const auto file = dir_.path() / "padded.bin";
  write_file(file, as_string(encode_header(shape, Dtype::F32)) + tensor_data(Dtype::F32) + "x");
  const auto verified = run_script({"verify", file.string()});
  EXPECT_EQ(verified.exit_code, 1);
  EXPECT_EQ(verified.err, file.string() + ": 101 bytes, expected 100\n");
}

}  // namespace
}  // namespace tensorstream::traw

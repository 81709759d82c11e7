#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/sha256.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/attached_rank.hpp"

namespace tensorstream::cli {
namespace {

struct AttachArguments {
  std::string socket;
  std::uint32_t rank = 0;
  bool json = false;
  std::string checksum;
  double timeout_seconds = 60;
  std::optional<uid_t> server_uid;
};

// The protocol's limit on timeout_ms (docs/spec/store-protocol.md).
constexpr int max_timeout_seconds = 86400;

std::string tensor_json(const store::TensorEntry& tensor, const std::string& digest) {
  std::string line = "{";
  append_key(line, "name");
  append_json_string(line, tensor.name);
  append_key(line, "dtype");
  append_json_string(line, dtype_name(tensor.dtype));
  append_key(line, "shape");
  append_int_array(line, tensor.shape);
  append_key(line, "region");
  append_json_string(line, tensor.region);
  append_key(line, "offset");
  line += std::to_string(tensor.offset);
  append_key(line, "bytes");
  line += std::to_string(tensor.bytes);
  if (!digest.empty()) {
    append_key(line, "sha256");
    append_json_string(line, digest);
  }
  return line + '}';
}

// NAME  DTYPE  [SHAPE]  REGION+OFFSET  BYTES  [SHA256], tab-separated.
std::string tensor_text(const store::TensorEntry& tensor, const std::string& digest) {
  std::string line = tensor.name + '\t' + std::string(dtype_name(tensor.dtype)) + '\t';
  append_int_array(line, tensor.shape);
  line += '\t' + tensor.region + '+' + std::to_string(tensor.offset) + '\t' +
          std::to_string(tensor.bytes);
  if (!digest.empty()) line += '\t' + digest;
  return line;
}

std::string summary_json(const store::Manifest& manifest, std::uint64_t bytes) {
  std::string line = "{\"summary\":{";
  append_key(line, "rank");
  line += std::to_string(manifest.rank);
  append_key(line, "generation");
  line += std::to_string(manifest.generation);
  append_key(line, "tensors");
  line += std::to_string(manifest.tensors.size());
  append_key(line, "bytes");
  line += std::to_string(bytes);
  append_key(line, "regions");
  line += '[';
  for (const auto& region : manifest.regions) {
    if (line.back() != '[') line += ',';
    line += '{';
    append_key(line, "name");
    append_json_string(line, region.name);
    append_key(line, "bytes");
    line += std::to_string(region.bytes);
    append_key(line, "writable");
    line += region.writable ? "true" : "false";
    line += '}';
  }
  return line + "]}}";
}

std::string summary_text(const std::string& socket, const store::Manifest& manifest,
                         std::uint64_t bytes) {
  std::string line = "attached rank " + std::to_string(manifest.rank) + " of " + socket +
                     ", generation " + std::to_string(manifest.generation) + ": " +
                     counted(manifest.tensors.size(), "tensor") + ", " + format_byte_size(bytes) +
                     "; regions";
  for (std::size_t i = 0; i < manifest.regions.size(); ++i) {
    const auto& region = manifest.regions[i];
    line += (i == 0 ? " " : ", ") + region.name + " (" + format_byte_size(region.bytes) + ", " +
            (region.writable ? "writable" : "read-only") + ")";
  }
  return line;
}

void run_attach(const AttachArguments& arguments) {
  if (!arguments.checksum.empty() && arguments.checksum != "sha256") {
    throw InvalidArgument("--checksum: unsupported algorithm '" + arguments.checksum +
                          "' (supported: sha256)");
  }
  store::AttachOptions options;
  options.timeout = timeout_flag(arguments.timeout_seconds, max_timeout_seconds, true);
  options.server_uid = arguments.server_uid;
  const store::AttachedRank rank = store::attach(arguments.socket, arguments.rank, options);
  const auto& manifest = rank.manifest();
  std::uint64_t bytes = 0;
  for (const auto& tensor : manifest.tensors) {
    const std::string digest = arguments.checksum.empty() ? "" : sha256_hex(rank.bytes(tensor));
    const std::string line =
        arguments.json ? tensor_json(tensor, digest) : tensor_text(tensor, digest);
    std::puts(line.c_str());
    bytes += tensor.bytes;
  }
  const std::string summary = arguments.json ? summary_json(manifest, bytes)
                                             : summary_text(arguments.socket, manifest, bytes);
  std::puts(summary.c_str());
  std::fflush(stdout);
}

}  // namespace

void register_attach_command(CLI::App& app) {
  auto arguments = std::make_shared<AttachArguments>();
  auto* command = app.add_subcommand(
      "attach", "Attach to a rank of a store server and list its tensors from the mapped memory");
  command->add_option("socket", arguments->socket, "The store server's Unix socket")->required();
  command->add_option("--rank", arguments->rank, "Tensor-parallel rank")->required();
  command->add_flag("--json", arguments->json, "One JSON object per tensor, then a summary");
  command->add_option("--checksum", arguments->checksum, "Hash each tensor's bytes: sha256");
  command->add_option("--timeout", arguments->timeout_seconds,
                      "Seconds to wait for the server to come up and load the rank")
      ->capture_default_str();
  command->add_option("--server-uid", arguments->server_uid,
                      "The uid the server runs as, where it is neither yours nor root's");
  command->callback([arguments] { run_attach(*arguments); });
}

}  // namespace tensorstream::cli

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/store_flags.hpp"
#include "cli/tensor_filter_flags.hpp"
#include "tensorstream/streaming/inspect.hpp"

namespace tensorstream::cli {
namespace {

struct InspectArguments {
  std::string url;
  bool json = false;
  int rank = 0;
  std::optional<int> tensor_parallel_size;
  TensorFilterFlags filter;
  StoreFlags store;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text;
  append_int_array(text, shape);
  return text;
}

std::string files_json(const std::vector<FileHeader>& files) {
  std::string out = "{";
  append_key(out, "files");
  out += '[';
  std::uint64_t tensors = 0;
  std::uint64_t bytes = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const auto& file = files[f];
    if (f != 0) out += ',';
    out += '{';
    append_key(out, "url");
    append_json_string(out, file.url);
    append_key(out, "size");
    out += std::to_string(file.size);
    append_key(out, "data_start");
    out += std::to_string(file.header.data_start);
    append_key(out, "metadata");
    out += '{';
    for (const auto& [key, value] : file.header.metadata) {
      append_key(out, key);
      append_json_string(out, value);
    }
    out += '}';
    append_key(out, "tensors");
    out += '[';
    for (std::size_t t = 0; t < file.header.tensors.size(); ++t) {
      const auto& tensor = file.header.tensors[t];
      if (t != 0) out += ',';
      out += '{';
      append_key(out, "name");
      append_json_string(out, tensor.name);
      append_key(out, "dtype");
      append_json_string(out, dtype_name(tensor.dtype));
      append_key(out, "shape");
      append_int_array(out, tensor.shape);
      append_key(out, "data_offsets");
      const std::int64_t offsets[] = {static_cast<std::int64_t>(tensor.begin),
                                      static_cast<std::int64_t>(tensor.end)};
      append_int_array(out, offsets);
      append_key(out, "bytes");
      out += std::to_string(tensor.byte_size());
      out += '}';
      ++tensors;
      bytes += tensor.byte_size();
    }
    out += "]}";
  }
  out += ']';
  append_key(out, "total_tensors");
  out += std::to_string(tensors);
  append_key(out, "total_bytes");
  out += std::to_string(bytes);
  out += '}';
  return out;
}

void print_table(const std::vector<FileHeader>& files) {
  std::uint64_t tensors = 0;
  std::uint64_t bytes = 0;
  for (const auto& file : files) {
    std::printf("%s (%s, %s, data at byte %llu)\n", file.url.c_str(),
                format_byte_size(file.size).c_str(),
                counted(file.header.tensors.size(), "tensor").c_str(),
                static_cast<unsigned long long>(file.header.data_start));
    for (const auto& tensor : file.header.tensors) {
      std::printf("  %-60s %-8s %-20s [%llu, %llu) %s\n", tensor.name.c_str(),
                  std::string(dtype_name(tensor.dtype)).c_str(), shape_text(tensor.shape).c_str(),
                  static_cast<unsigned long long>(tensor.begin),
                  static_cast<unsigned long long>(tensor.end),
                  format_byte_size(tensor.byte_size()).c_str());
      ++tensors;
      bytes += tensor.byte_size();
    }
  }
  std::printf("total: %s, %s in %s\n", counted(tensors, "tensor").c_str(),
              format_byte_size(bytes).c_str(), counted(files.size(), "file").c_str());
}

}  // namespace

void register_inspect_command(CLI::App& app) {
  auto arguments = std::make_shared<InspectArguments>();
  auto* command = app.add_subcommand("inspect", "Print the headers of a checkpoint");
  command->add_option("url", arguments->url, "File, directory or prefix")->required();
  command->add_flag("--json", arguments->json, "One JSON document instead of a table");
  command->add_option("--rank", arguments->rank, "Tensor-parallel rank")->capture_default_str();
  command->add_option("--tp", arguments->tensor_parallel_size,
                      "Tensor-parallel size: selects TP{N}/shard{RANK}/ under a TRAW model "
                      "prefix; above 1, the rank files model-rank-{RANK}-part-*.safetensors")
      ->check(positive_number);
  add_tensor_filter_flags(*command, arguments->filter);
  add_store_flags(*command, arguments->store);
  command->callback([arguments] {
    check_rank_flags(arguments->rank, arguments->tensor_parallel_size);
    StreamerOptions options;
    options.store = apply_store_flags(arguments->store);
    options.rank = arguments->rank;
    options.tensor_parallel_size = arguments->tensor_parallel_size;
    options.select = tensor_selection(arguments->filter);
    const auto files = inspect(arguments->url, options);
    require_selected(arguments->filter, files.size(), arguments->url);
    if (arguments->json) {
      std::puts(files_json(files).c_str());
    } else {
      print_table(files);
    }
  });
}

}  // namespace tensorstream::cli

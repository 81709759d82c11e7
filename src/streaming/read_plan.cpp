#include "streaming/read_plan.hpp"

#include <algorithm>

namespace tensorstream::detail {

std::uint64_t PlannedRead::memory() const {
  std::uint64_t bytes = coalesced() ? length : 0;
  for (const TensorInfo* tensor : tensors) bytes += tensor->byte_size();
  return bytes;
}

std::vector<PlannedRead> plan_reads(const std::vector<SourceFile>& files, std::uint64_t chunk_size,
                                    std::uint64_t memory_limit, ReadOrder order) {
  const std::uint64_t max_span = std::min(chunk_size, memory_limit / 4);
  const auto small = [&](const TensorInfo& tensor) {
    const std::uint64_t bytes = tensor.byte_size();
    return bytes != 0 && bytes < coalesce_below && bytes <= max_span;
  };

  std::vector<PlannedRead> reads;
  for (const auto& file : files) {
    PlannedRead run;
    const auto flush = [&] {
      if (!run.tensors.empty()) reads.push_back(std::move(run));
      run = {};
    };
    // A header lists its tensors by offset.
    for (const TensorInfo& info : file.header.tensors) {
      const TensorInfo* tensor = &info;
      const PlannedRead alone{&file, {tensor}, tensor->begin, tensor->byte_size()};
      if (!small(*tensor)) {
        if (tensor->byte_size() != 0) flush();
        reads.push_back(alone);
        continue;
      }
      const std::uint64_t run_end = run.begin + run.length;
      if (!run.tensors.empty() && tensor->begin >= run_end &&
          tensor->begin - run_end <= max_coalesced_gap && tensor->end - run.begin <= max_span) {
        run.tensors.push_back(tensor);
        run.length = tensor->end - run.begin;
        continue;
      }
      flush();
      run = alone;
    }
    flush();
  }
  if (order == ReadOrder::file_order) return reads;
  std::stable_sort(reads.begin(), reads.end(),
                   [](const PlannedRead& a, const PlannedRead& b) { return a.length < b.length; });
  return reads;
}

}  // namespace tensorstream::detail

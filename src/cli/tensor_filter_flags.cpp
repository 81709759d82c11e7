#include "cli/tensor_filter_flags.hpp"

#include "base/name_patterns.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/streaming/tensor_selection.hpp"

namespace tensorstream::cli {

void add_tensor_filter_flags(CLI::App& command, TensorFilterFlags& flags) {
  command.add_option("--include", flags.include,
                     "Only tensors whose names match this glob, e.g. 'model.layers.*' "
                     "(repeatable: any of them)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command.add_option("--exclude", flags.exclude,
                     "Leave out tensors whose names match this glob (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

TensorSelection tensor_selection(const TensorFilterFlags& flags) {
  return select_by_name(flags.include, flags.exclude);
}

void require_selected(const TensorFilterFlags& flags, std::uint64_t tensors,
                      const std::string& url) {
  if (!flags.any() || tensors > 0) return;
  const tensorstream::detail::NamePatterns patterns{flags.include, flags.exclude};
  throw StorageError(redact_query(url), patterns.nothing_taken("tensor"));
}

}  // namespace tensorstream::cli

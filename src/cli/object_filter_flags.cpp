#include "cli/object_filter_flags.hpp"

namespace tensorstream::cli {

void add_object_filter_flags(CLI::App& command, tensorstream::detail::NamePatterns& patterns) {
  command.add_option("--include", patterns.include,
                     "Only objects whose path below the prefix matches this glob ('*' matches "
                     "'/' too: '*.json' at any depth; repeatable: any of them)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command.add_option("--exclude", patterns.exclude,
                     "Leave out objects whose path below the prefix matches this glob "
                     "(repeatable; wins over --include)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace tensorstream::cli

#include "cli/object_filter_flags.hpp"

#include <map>

namespace tensorstream::cli {

void add_object_filter_flags(CLI::App& command, tensorstream::detail::NamePatterns& patterns,
                             FilterOrder order) {
  command.add_option("--include", patterns.include,
                     "Only objects whose path below the prefix matches this glob ('*' matches "
                     "'/' too: '*.json' at any depth; repeatable: any of them)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command.add_option("--exclude", patterns.exclude,
                     std::string("Leave out objects whose path below the prefix matches this "
                                 "glob (repeatable; ") +
                         (order == FilterOrder::exclude_wins
                              ? "wins over --include)"
                              : "the last --include or --exclude a path matches decides)"))
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

tensorstream::detail::OrderedNamePatterns filters_in_order(const CLI::App& command) {
  const CLI::Option* include = command.get_option("--include");
  // Each occurrence takes one value (expected(1)), and parse_order() names the option once per
  // value taken: the n-th mention of an option is its n-th result.
  std::map<const CLI::Option*, std::size_t> taken;
  tensorstream::detail::OrderedNamePatterns ordered;
  for (const CLI::Option* option : command.parse_order()) {
    if (option != include && option != command.get_option("--exclude")) continue;
    ordered.filters.push_back({option == include, option->results().at(taken[option]++)});
  }
  return ordered;
}

}  // namespace tensorstream::cli

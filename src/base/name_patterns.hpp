#pragma once
// Choosing names (of tensors, of objects below a prefix) with include and exclude globs.

#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::detail {

/// Include and exclude patterns, shell globs as fnmatch(3) reads them without flags: `*` also
/// matches '/' and '.', so `*.json` takes JSON files at any depth. An exclude wins over every
/// include, whatever their order.
struct NamePatterns {
  std::vector<std::string> include;  ///< Names matching one of these; all names when empty.
  std::vector<std::string> exclude;  ///< Minus names matching one of these.

  /// Whether both lists are empty, so that every name is taken.
  bool empty() const { return include.empty() && exclude.empty(); }

  /// Whether `name` is taken.
  bool selects(const std::string& name) const;

  /// The patterns as a command line spells them, for messages: "--include '*.json' --exclude
  /// 'x*'"; empty when there are none.
  std::string spelled() const;

  /// Throws InvalidArgument for an empty pattern, which matches no `what` ("tensor name").
  void check(std::string_view what) const;

  /// Why none of `names` (every candidate) is taken, naming the patterns to blame, for the error
  /// that says so; `what` is a name's kind, "object under this prefix". Where no name matches an
  /// include: "no object under this prefix matches --include '*.gguf'"; else the excludes that
  /// left out the rest: "--exclude '*' leaves out every object under this prefix that --include
  /// '*.json' takes (an --exclude wins over every --include)".
  std::string nothing_taken(const std::vector<std::string>& names, std::string_view what) const;

  /// nothing_taken() where the names are not at hand: an exclude of nothing but '*' is to blame,
  /// else every pattern.
  std::string nothing_taken(std::string_view what) const;
};

/// "--exclude 'a' --exclude 'b'": `patterns` as a command line spells them after `flag`.
std::string spelled_patterns(std::string_view flag, const std::vector<std::string>& patterns);

/// Whether `pattern` matches `name`, as NamePatterns reads it.
bool matches(const std::string& pattern, const std::string& name);

/// The message of NamePatterns::nothing_taken() (and its ordered kin) where `excludes` left out
/// every `what` that `includes` took (every one, when there are no includes), `rule` saying in
/// parentheses how includes and excludes combine.
std::string left_out_by(const std::vector<std::string>& excludes,
                        const std::vector<std::string>& includes, std::string_view what,
                        std::string_view rule);

}  // namespace tensorstream::detail

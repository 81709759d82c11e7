#pragma once
// Environment variables changed for one test and restored afterwards.

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace tensorstream::testing {

/// Unsets the variables it is given and restores every variable it touched, those given and
/// those set() or unset() later, to its value from before when destroyed.
class ScopedEnvironment {
 public:
  /// Unsets `names`.
  explicit ScopedEnvironment(std::initializer_list<const char*> names = {});
  ~ScopedEnvironment();

  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

  /// Sets `name` to `value` until destruction.
  void set(const std::string& name, const std::string& value);

  /// Unsets `name` until destruction.
  void unset(const std::string& name);

 private:
  void save(const std::string& name);

  // Each touched variable with its value from before (nullopt: it was unset).
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace tensorstream::testing

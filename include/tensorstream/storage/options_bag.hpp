#pragma once
/// @file
/// Options of object stores that StoreOptions has no member for: one value per type.

#include <map>
#include <memory>
#include <typeindex>
#include <typeinfo>
#include <utility>

namespace tensorstream {

/// Holds at most one value of each type, e.g. the options of a scheme registered outside the
/// library (register_scheme()), so that adding a backend adds no member to StoreOptions:
///
///     StoreOptions options;
///     options.extra.set(MemoryOptions{.latency = std::chrono::milliseconds(5)});
///     // ...and in the scheme's opener:
///     const MemoryOptions* mine = options.extra.find<MemoryOptions>();
///
/// Values are immutable once set; copies of a bag share them.
class OptionsBag {
 public:
  /// Keeps `value`, replacing a value of the same type.
  template <class T>
  void set(T value) {
    values_[std::type_index(typeid(T))] = std::make_shared<const T>(std::move(value));
  }

  /// The value of type T, or nullptr when none was set.
  template <class T>
  const T* find() const {
    const auto found = values_.find(std::type_index(typeid(T)));
    return found == values_.end() ? nullptr : static_cast<const T*>(found->second.get());
  }

 private:
  std::map<std::type_index, std::shared_ptr<const void>> values_;
};

}  // namespace tensorstream

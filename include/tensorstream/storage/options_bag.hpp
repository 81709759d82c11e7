#pragma once
/// @file
/// Options of object stores, one value per type, so that adding a backend adds no member to any
/// struct.

#include <map>
#include <memory>
#include <typeindex>
#include <typeinfo>
#include <utility>

namespace tensorstream {

/// Holds at most one value of each type: the options of each backend (StoreOptions is one), also
/// of a scheme registered outside the library (register_scheme()):
///
///     StoreOptions options;
///     options.get<MemoryOptions>().latency = std::chrono::milliseconds(5);
///     // ...and in the scheme's opener:
///     const MemoryOptions* mine = options.find<MemoryOptions>();
///
/// A bag is a value: its copies share what they hold until one of them changes it (get() copies
/// the value first where another bag still shares it). Like any value, one bag is not to be
/// changed on one thread while another thread reads it.
class OptionsBag {
 public:
  /// Keeps `value`, replacing a value of the same type.
  template <class T>
  void set(T value) {
    values_[std::type_index(typeid(T))] = Entry::of(std::make_shared<T>(std::move(value)));
  }

  /// The value of type T, or nullptr when none was set.
  template <class T>
  const T* find() const {
    const auto found = values_.find(std::type_index(typeid(T)));
    return found == values_.end() ? nullptr : static_cast<const T*>(found->second.value.get());
  }

  /// The value of type T to change: a default-constructed one where none was set.
  template <class T>
  T& get() {
    auto [found, added] = values_.try_emplace(std::type_index(typeid(T)));
    Entry& entry = found->second;
    if (added) {
      entry = Entry::of(std::make_shared<T>());
    } else if (entry.value.use_count() > 1) {
      entry.value = entry.copy(entry.value.get());
    }
    return *static_cast<T*>(entry.value.get());
  }

  /// The value of type T, or T's defaults where none was set.
  template <class T>
  const T& get() const {
    if (const T* value = find<T>()) return *value;
    static const T defaults{};
    return defaults;
  }

 private:
  struct Entry {
    std::shared_ptr<void> value;
    std::shared_ptr<void> (*copy)(const void*) = nullptr;

    template <class T>
    static Entry of(std::shared_ptr<T> value) {
      return {std::move(value),
              [](const void* from) -> std::shared_ptr<void> {
                return std::make_shared<T>(*static_cast<const T*>(from));
              }};
    }
  };

  std::map<std::type_index, Entry> values_;
};

}  // namespace tensorstream

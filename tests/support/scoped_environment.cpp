#include "support/scoped_environment.hpp"

#include <stdlib.h>

namespace tensorstream::testing {

ScopedEnvironment::ScopedEnvironment(std::initializer_list<const char*> names) {
  for (const char* name : names) unset(name);
}

ScopedEnvironment::~ScopedEnvironment() {
  for (const auto& [name, value] : saved_) {
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
}

void ScopedEnvironment::save(const std::string& name) {
  if (saved_.contains(name)) return;
  const char* value = getenv(name.c_str());
  saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
}

void ScopedEnvironment::set(const std::string& name, const std::string& value) {
  save(name);
  setenv(name.c_str(), value.c_str(), 1);
}

void ScopedEnvironment::unset(const std::string& name) {
  save(name);
  unsetenv(name.c_str());
}

}  // namespace tensorstream::testing

#include <algorithm>
#include <mutex>

#include "storage/builtin_schemes.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/scheme.hpp"

namespace tensorstream {
namespace {

class Registry {
 public:
  Registry() {
    using enum CommonSetting;
    add({.name = "file", .form = UrlForm::path, .open = open_file_store});
    add({.name = "http", .form = UrlForm::server, .default_port = 80, .open = open_http_store});
    add({.name = "https", .form = UrlForm::server, .default_port = 443, .open = open_http_store});
    add({.name = "s3",
         .form = UrlForm::bucket,
         .open = open_s3_store,
         .takes = {anonymous, endpoint, region, profile},
         .apply = apply_s3_settings});
    add({.name = "gs",
         .form = UrlForm::bucket,
         .open = open_gcs_store,
         .takes = {anonymous},
         .apply = apply_gcs_settings});
    add({.name = "az",
         .form = UrlForm::bucket,
         .open = open_azure_store,
         .takes = {anonymous, endpoint, account},
         .apply = apply_azure_settings,
         .claims = is_azure_blob_url});
    add({.name = "hf",
         .form = UrlForm::bucket,
         .open = open_hf_store,
         .takes = {anonymous},
         .apply = apply_hf_settings});
  }

  void add(Scheme scheme) {
    check_name(scheme.name);
    if (!scheme.open) throw InvalidArgument(scheme.name + "://: a scheme needs an opener");
    if (!scheme.takes.empty() && !scheme.apply) {
      throw InvalidArgument(scheme.name + "://: a scheme that takes common settings needs `apply`");
    }
    std::lock_guard lock(mutex_);
    if (find_locked(scheme.name)) {
      throw InvalidArgument(scheme.name + ":// is registered already");
    }
    schemes_.push_back(std::make_shared<const Scheme>(std::move(scheme)));
  }

  std::shared_ptr<const Scheme> find(std::string_view name) const {
    std::lock_guard lock(mutex_);
    return find_locked(name);
  }

  std::vector<std::string> names() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& scheme : schemes_) names.push_back(scheme->name);
    return names;
  }

  // A copy, so that the schemes' own functions run without the lock: a claim or an applier may
  // ask the registry in turn.
  std::vector<std::shared_ptr<const Scheme>> all() const {
    std::lock_guard lock(mutex_);
    return schemes_;
  }

 private:
  // RFC 3986's scheme characters, lowercase only, since Url::parse lowercases what it reads.
  static void check_name(const std::string& name) {
    const bool valid =
        !name.empty() && name.front() >= 'a' && name.front() <= 'z' &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
                 c == '.';
        });
    if (!valid) {
      throw InvalidArgument("'" + name + "' is no scheme name: lowercase letters, digits, '+', "
                            "'-' and '.', starting with a letter");
    }
  }

  std::shared_ptr<const Scheme> find_locked(std::string_view name) const {
    for (const auto& scheme : schemes_) {
      if (scheme->name == name) return scheme;
    }
    return nullptr;
  }

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const Scheme>> schemes_;
};

// Never destroyed: streams on other threads may parse URLs while the program exits.
Registry& registry() {
  static Registry* const instance = new Registry;
  return *instance;
}

bool takes(const Scheme& scheme, CommonSetting setting) {
  return std::ranges::find(scheme.takes, setting) != scheme.takes.end();
}

// `settings` as `scheme` receives them: those it does not take unset.
CommonStoreSettings taken_by(const Scheme& scheme, const CommonStoreSettings& settings) {
  using enum CommonSetting;
  CommonStoreSettings taken;
  if (takes(scheme, anonymous)) taken.anonymous = settings.anonymous;
  if (takes(scheme, endpoint)) taken.endpoint = settings.endpoint;
  if (takes(scheme, region)) taken.region = settings.region;
  if (takes(scheme, account)) taken.account = settings.account;
  if (takes(scheme, profile)) taken.profile = settings.profile;
  return taken;
}

bool any_given(const CommonStoreSettings& settings) {
  return settings.anonymous || !settings.endpoint.empty() || !settings.region.empty() ||
         !settings.account.empty() || !settings.profile.empty();
}

}  // namespace

void register_scheme(Scheme scheme) { registry().add(std::move(scheme)); }

std::shared_ptr<const Scheme> find_scheme(std::string_view name) { return registry().find(name); }

std::shared_ptr<const Scheme> find_scheme_serving(const Url& url, const StoreOptions& options) {
  for (const auto& scheme : registry().all()) {
    if (scheme->name != url.scheme && scheme->claims && scheme->claims(url, options)) {
      return scheme;
    }
  }
  return find_scheme(url.scheme);
}

void apply_common_settings(const CommonStoreSettings& settings, StoreOptions& options) {
  for (const auto& scheme : registry().all()) {
    const CommonStoreSettings taken = taken_by(*scheme, settings);
    if (any_given(taken)) scheme->apply(taken, options);
  }
}

std::vector<std::string> schemes_taking(CommonSetting setting) {
  std::vector<std::string> names;
  for (const auto& scheme : registry().all()) {
    if (takes(*scheme, setting)) names.push_back(scheme->name);
  }
  return names;
}

std::vector<std::string> scheme_names() { return registry().names(); }

}  // namespace tensorstream

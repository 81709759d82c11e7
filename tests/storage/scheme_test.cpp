// Schemes a program registers: how their URLs parse, how open_store finds their stores, which
// common settings reach them and which URLs of other schemes they claim. Each test registers names
// of its own, since the registry lives as long as the process.
#include "tensorstream/storage/scheme.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>

#include "support/memory_store.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/resolve_url.hpp"

namespace tensorstream {
namespace {

using testing::MemoryObjects;
using testing::MemoryStore;

// What a memory store serves, passed the way a backend outside the library gets its options.
struct MemoryOptions {
  std::shared_ptr<const MemoryObjects> objects;
};

StoreOpener memory_opener() {
  return [](const Url& url, boost::asio::any_io_executor,
            const StoreOptions& options) -> std::unique_ptr<ObjectStore> {
    const MemoryOptions* mine = options.find<MemoryOptions>();
    if (mine == nullptr) throw InvalidArgument(url.str() + ": no MemoryOptions given");
    return std::make_unique<MemoryStore>(url.host, mine->objects);
  };
}

std::string invalid_argument(const std::function<void()>& call) {
  try {
    call();
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no InvalidArgument";
}

TEST(Schemes, TheBuiltInOnesComeFirst) {
  const std::vector<std::string> names = scheme_names();
  ASSERT_GE(names.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 6),
            (std::vector<std::string>{"file", "http", "https", "s3", "gs", "az"}));
  EXPECT_EQ(find_scheme("https")->default_port, 443);
  EXPECT_EQ(find_scheme("gs")->form, UrlForm::bucket);
  EXPECT_EQ(find_scheme("ftp"), nullptr);
}

TEST(Schemes, ARegisteredBucketSchemeParsesOpensAndStreamsThroughOpenStore) {
  register_scheme({.name = "mem", .form = UrlForm::bucket, .open = memory_opener()});
  const Url url = Url::parse("MEM://weights/llama/a?b%20.bin");
  EXPECT_EQ(url.scheme, "mem");
  EXPECT_EQ(url.host, "weights");
  EXPECT_EQ(url.path, "/llama/a?b%20.bin") << "a bucket's key is taken literally";
  EXPECT_EQ(url.str(), "mem://weights/llama/a?b%20.bin");
  EXPECT_EQ(invalid_argument([] { Url::parse("mem://weights:9000/x"); }),
            "invalid URL 'mem://weights:9000/x': buckets take no port");
  EXPECT_EQ(resolve_url("mem://weights/llama").str(), "mem://weights/llama/")
      << "a bucket path without a checkpoint's suffix is a prefix";
  EXPECT_EQ(invalid_argument([] { Url::parse("mem:/weights/x"); }),
            "invalid URL 'mem:/weights/x': a URL needs 'mem://'; write ./mem:/weights/x for a "
            "local path");

  StoreOptions options;
  options.set(MemoryOptions{std::make_shared<const MemoryObjects>(
      MemoryObjects{{"/llama/a.bin", "0123456789"}})});
  boost::asio::io_context io;
  const auto store = open_store(Url::parse("mem://weights/"), io.get_executor(), options);
  EXPECT_EQ(store->url("/llama/a.bin"), "mem://weights/llama/a.bin");
  EXPECT_EQ(testing::read_string(io, *store, "/llama/a.bin", 3, 4), "3456");
  EXPECT_EQ(invalid_argument([&] { open_store(Url::parse("mem://weights/"), io.get_executor()); }),
            "mem://weights/: no MemoryOptions given");
}

TEST(Schemes, ServerAndPathFormsParseAsHttpAndFileDo) {
  const StoreOpener refuse = [](const Url& url, boost::asio::any_io_executor,
                                const StoreOptions&) -> std::unique_ptr<ObjectStore> {
    throw InvalidArgument(url.str() + ": refused");
  };
  register_scheme(
      {.name = "weights+tls", .form = UrlForm::server, .default_port = 7443, .open = refuse});
  register_scheme({.name = "local-2", .form = UrlForm::path, .open = refuse});

  Url server = Url::parse("weights+tls://host/m.safetensors?v=2");
  EXPECT_EQ(server.port, 7443);
  EXPECT_EQ(server.path, "/m.safetensors");
  EXPECT_EQ(server.query, "v=2");
  EXPECT_EQ(server.str_with_query(), "weights+tls://host/m.safetensors?v=2")
      << "the default port is left out";
  EXPECT_EQ(server.str(), "weights+tls://host/m.safetensors?…") << "a server form's query is hidden";
  EXPECT_EQ(Url::parse("weights+tls://host:8443/m").str(), "weights+tls://host:8443/m");

  const Url path = Url::parse("local-2:///data/m.safetensors");
  EXPECT_EQ(path.host, "");
  EXPECT_EQ(path.path, "/data/m.safetensors");
  EXPECT_EQ(path.str(), "local-2:///data/m.safetensors");
  EXPECT_EQ(invalid_argument([] { Url::parse("local-2://data"); }),
            "invalid URL 'local-2://data': local-2 URLs need an absolute path");
  boost::asio::io_context io;
  EXPECT_EQ(invalid_argument([&] { open_store(path, io.get_executor()); }),
            "local-2:///data/m.safetensors: refused");
}

TEST(Schemes, NamesAreCheckedAndNotTakenTwice) {
  const StoreOpener open = memory_opener();
  EXPECT_EQ(invalid_argument([&] { register_scheme({.name = "s3", .open = open}); }),
            "s3:// is registered already");
  for (const std::string name : {"", "Mem", "2mem", "me m", "mem/x"}) {
    EXPECT_EQ(invalid_argument([&] { register_scheme({.name = name, .open = open}); }),
              "'" + name + "' is no scheme name: lowercase letters, digits, '+', '-' and '.', "
                           "starting with a letter")
        << name;
  }
  EXPECT_EQ(invalid_argument([] { register_scheme({.name = "noopener", .open = {}}); }),
            "noopener://: a scheme needs an opener");
  EXPECT_EQ(find_scheme("noopener"), nullptr);
}

// A key-value scheme's own options, which take a region and an endpoint from the common settings.
struct KvOptions {
  std::string region;
  std::string endpoint;
  int applied = 0;  // How often apply_common_settings() handed it settings.
};

TEST(Schemes, CommonSettingsReachEverySchemeThatTakesThemAndNoOther) {
  register_scheme({.name = "kv",
                   .form = UrlForm::bucket,
                   .open = memory_opener(),
                   .takes = {CommonSetting::region, CommonSetting::endpoint},
                   .apply = [](const CommonStoreSettings& settings, StoreOptions& options) {
                     KvOptions& mine = options.get<KvOptions>();
                     ++mine.applied;
                     if (!settings.region.empty()) mine.region = settings.region;
                     if (!settings.endpoint.empty()) mine.endpoint = settings.endpoint;
                     EXPECT_EQ(settings.account, "") << "kv:// does not take an account";
                     EXPECT_FALSE(settings.anonymous) << "kv:// does not take anonymous";
                   }});

  StoreOptions options;
  options.s3().region = "kept";
  apply_common_settings({.endpoint = "http://127.0.0.1:9000", .account = "devstoreaccount1"},
                        options);
  EXPECT_EQ(options.get<KvOptions>().endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(options.get<KvOptions>().region, "");
  EXPECT_EQ(options.s3().endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(options.s3().region, "kept") << "a setting not given leaves the options alone";
  EXPECT_EQ(options.azure().endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(options.azure().account, "devstoreaccount1");

  apply_common_settings({.anonymous = true, .region = "eu-west-1"}, options);
  EXPECT_EQ(options.get<KvOptions>().region, "eu-west-1");
  EXPECT_EQ(options.s3().region, "eu-west-1");
  EXPECT_FALSE(options.s3().sign_requests);
  EXPECT_TRUE(options.gcs().anonymous);
  EXPECT_TRUE(options.azure().anonymous);
  EXPECT_TRUE(options.hf().anonymous);

  apply_common_settings({.anonymous = true, .account = "other"}, options);
  EXPECT_EQ(options.get<KvOptions>().applied, 2) << "none of kv://'s settings was given";
  EXPECT_EQ(options.azure().account, "other");

  const std::vector<std::string> regions = schemes_taking(CommonSetting::region);
  ASSERT_GE(regions.size(), 2u);
  EXPECT_EQ(regions.front(), "s3");
  EXPECT_NE(std::find(regions.begin(), regions.end(), "kv"), regions.end());
  EXPECT_EQ(schemes_taking(CommonSetting::profile), std::vector<std::string>{"s3"});
  EXPECT_EQ(schemes_taking(CommonSetting::anonymous),
            (std::vector<std::string>{"s3", "gs", "az", "hf"}));
}

TEST(Schemes, TakingSettingsNeedsSomethingToReceiveThem) {
  EXPECT_EQ(invalid_argument([] {
              register_scheme({.name = "deaf",
                               .open = memory_opener(),
                               .takes = {CommonSetting::endpoint}});
            }),
            "deaf://: a scheme that takes common settings needs `apply`");
  EXPECT_EQ(find_scheme("deaf"), nullptr);
}

TEST(Schemes, AClaimOpensAnotherSchemesUrlsWithItsOwnOpener) {
  register_scheme({.name = "mirror",
                   .form = UrlForm::bucket,
                   .open = memory_opener(),
                   .claims = [](const Url& url, const StoreOptions&) {
                     return url.scheme == "https" && url.host == "mirror.test";
                   }});
  const StoreOptions none;
  EXPECT_EQ(find_scheme_serving(Url::parse("https://mirror.test/m/a.bin"), none)->name, "mirror");
  EXPECT_EQ(find_scheme_serving(Url::parse("http://mirror.test/m/a.bin"), none)->name, "http");
  EXPECT_EQ(find_scheme_serving(Url::parse("https://other.test/m/a.bin"), none)->name, "https");
  EXPECT_EQ(find_scheme_serving(Url::parse("https://acct.blob.core.windows.net/c/m.bin"), none)
                ->name,
            "az")
      << "az:// claims Azure's blob endpoints";

  StoreOptions options;
  options.set(MemoryOptions{std::make_shared<const MemoryObjects>(
      MemoryObjects{{"/m/a.bin", "0123456789"}})});
  boost::asio::io_context io;
  const auto store =
      open_store(Url::parse("https://mirror.test/m/a.bin"), io.get_executor(), options);
  EXPECT_EQ(store->url("/m/a.bin"), "mem://mirror.test/m/a.bin") << "mirror://'s store";
  EXPECT_EQ(testing::read_string(io, *store, "/m/a.bin", 2, 3), "234");
}

TEST(Schemes, AnUnknownSchemeNamesTheRegisteredOnes) {
  register_scheme({.name = "vault", .form = UrlForm::bucket, .open = memory_opener()});
  const std::string message = invalid_argument([] { Url::parse("ftp://host/x"); });
  // Other tests of this process may have registered theirs in between.
  EXPECT_TRUE(message.starts_with(
      "invalid URL 'ftp://host/x': unsupported scheme 'ftp' (use file, http, https, s3, gs"))
      << message;
  EXPECT_TRUE(message.ends_with(" or vault)")) << message;
}

}  // namespace
}  // namespace tensorstream

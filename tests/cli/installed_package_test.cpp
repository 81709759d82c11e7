// `cmake --install` gives a working package: the tool runs from its prefix alone, the libraries
// carry their soname and export only what the installed headers declare, pkg-config builds a
// program against them, a program that only batches builds with the Boost headers alone, and
// programs that set no C++ standard of their own build against each library.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_process;
using testing::TempDir;

class InstalledPackage : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(TENSORSTREAM_SANITIZED_BUILD)
    GTEST_SKIP() << "a sanitized build makes only what the suite runs, and its libraries would "
                    "need the sanitizer's runtime; the release build checks the package";
#endif
    const auto installed = run_process(
        {TENSORSTREAM_CMAKE_COMMAND, "--install", TENSORSTREAM_BINARY_DIR, "--prefix", prefix()});
    ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  }

  std::string prefix() const { return (root_.path() / "prefix").string(); }

  // Writes a CMake project `name` that finds the installed package and builds probe.cpp from
  // `probe` as `cmake_lists` says, then configures it (with `configure_flags`) and builds it;
  // returns its build directory. It sets no CMAKE_CXX_STANDARD: the package's targets must ask
  // for the C++20 their headers need, so that a project on the compiler's default still builds.
  std::filesystem::path build_consumer(const std::string& name, const std::string& cmake_lists,
                                       const std::string& probe,
                                       const std::vector<std::string>& configure_flags = {}) {
    const auto project = root_.path() / name;
    std::filesystem::create_directories(project);
    std::ofstream(project / "CMakeLists.txt")
        << "cmake_minimum_required(VERSION 3.25)\nproject(" << name << " LANGUAGES CXX)\n"
        << cmake_lists;
    std::ofstream(project / "probe.cpp") << probe;
    const auto build = root_.path() / (name + "-build");
    std::vector<std::string> configure = {TENSORSTREAM_CMAKE_COMMAND, "-S", project.string(),
                                          "-B", build.string(), "-DCMAKE_PREFIX_PATH=" + prefix()};
    configure.insert(configure.end(), configure_flags.begin(), configure_flags.end());
    const auto configured = run_process(configure);
    EXPECT_EQ(configured.exit_code, 0) << configured.out << configured.err;
    const auto built = run_process({TENSORSTREAM_CMAKE_COMMAND, "--build", build.string()});
    EXPECT_EQ(built.exit_code, 0) << built.out << built.err;
    return build;
  }

  // The installed files, wherever GNUInstallDirs put the libraries (lib or lib/<multiarch>).
  std::filesystem::path find(const std::string& name) const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(prefix())) {
      if (entry.path().filename() == name) return entry.path();
    }
    return {};
  }

  TempDir root_;
};

TEST_F(InstalledPackage, TheToolRunsFromItsPrefixAlone) {
  const std::string tool = prefix() + "/bin/tensorstream";
  // No LD_LIBRARY_PATH: the tool links the library statically and needs nothing beside it.
  const auto version = run_process({"/usr/bin/env", "-u", "LD_LIBRARY_PATH", tool, "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, testing::run_cli({"--version"}).out);

  const std::string model = (root_.path() / "model").string();
  ASSERT_EQ(run_process({tool, "gen-model", model}).exit_code, 0);
  const auto streamed = run_process({"/usr/bin/env", "-u", "LD_LIBRARY_PATH", tool, "stream",
                                     model, "--json"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_NE(streamed.out.find("{\"summary\":{\"tensors\":21,"), std::string::npos) << streamed.out;
}

TEST_F(InstalledPackage, TheLibrariesCarryTheirSoname) {
  for (const std::string library :
       {"libtensorstream_batching", "libtensorstream_core", "libtensorstream"}) {
    const auto link = find(library + ".so");
    ASSERT_FALSE(link.empty()) << library;
    ASSERT_TRUE(std::filesystem::is_symlink(link)) << link;
    EXPECT_EQ(std::filesystem::read_symlink(link).string(), library + ".so.0.1");
    EXPECT_TRUE(std::filesystem::exists(link.parent_path() / (library + ".so.0.1.0"))) << library;
  }
}

TEST_F(InstalledPackage, PkgConfigBuildsAProgramAgainstTheCoreLibrary) {
  const auto pc = find("tensorstream-core.pc");
  ASSERT_FALSE(pc.empty());
  ASSERT_TRUE(std::filesystem::exists(pc.parent_path() / "tensorstream.pc"));
  const auto program = root_.path() / "probe.cpp";
  std::ofstream(program) << R"(#include <tensorstream/streaming/inspect.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  std::uint64_t tensors = 0;
  for (const auto& file : tensorstream::inspect(argv[1])) tensors += file.header.tensors.size();
  std::printf("%llu tensors\n", static_cast<unsigned long long>(tensors));
  return argc == 2 ? 0 : 1;
}
)";
  const auto flags = run_process({"/usr/bin/env", "PKG_CONFIG_PATH=" + pc.parent_path().string(),
                                  "pkg-config", "--cflags", "--libs", "tensorstream-core"});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  // Relative to the .pc file: right wherever the prefix was installed or moved to.
  EXPECT_NE(flags.out.find("-I" + pc.parent_path().string() + "/../../include"), std::string::npos)
      << flags.out;
  const auto binary = root_.path() / "probe";
  const auto compiled = run_process(
      {"/bin/sh", "-c", "c++ '" + program.string() + "' -o '" + binary.string() + "' " +
                            flags.out});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  const std::string model = (root_.path() / "model").string();
  ASSERT_EQ(testing::run_cli({"gen-model", model}).exit_code, 0);
  const auto probed = run_process({binary.string(), model});
  ASSERT_EQ(probed.exit_code, 0) << probed.err;
  EXPECT_EQ(probed.out, "21 tensors\n");
}

// Every identifier the installed headers under `directory` declare or use in code: comments,
// string literals and #include lines are left out, so that a word of a doc comment ("sign" of
// "--no-sign-request") does not pass for a declaration.
std::set<std::string> identifiers_under(const std::filesystem::path& directory) {
  static const std::regex literal(R"("(\\.|[^"\\\n])*")");
  static const std::regex comment("//[^\n]*");
  static const std::regex include("#\\s*include[^\n]*");
  static const std::regex identifier("[A-Za-z_][A-Za-z_0-9]*");
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (!entry.is_regular_file()) continue;
    std::stringstream text;
    text << std::ifstream(entry.path()).rdbuf();
    std::string code = std::regex_replace(text.str(), comment, "");
    code = std::regex_replace(code, literal, "\"\"");
    code = std::regex_replace(code, include, "");
    for (std::sregex_iterator it(code.begin(), code.end(), identifier), end; it != end; ++it) {
      names.insert(it->str());
    }
  }
  return names;
}

// What a demangled symbol names, as the components of its qualified name: "typeinfo for
// tensorstream::s3::ChainProvider" and "tensorstream::s3::ChainProvider::name() const" both give
// {"tensorstream", "s3", "ChainProvider", ...}. Template arguments and parameters are left out.
std::vector<std::string> qualified_name(std::string symbol) {
  for (auto tag = symbol.find("[abi:"); tag != std::string::npos; tag = symbol.find("[abi:")) {
    symbol.erase(tag, symbol.find(']', tag) + 1 - tag);
  }
  for (const std::string prefix : {"typeinfo name for ", "typeinfo for ", "vtable for ",
                                   "VTT for ", "guard variable for "}) {
    if (symbol.starts_with(prefix)) symbol.erase(0, prefix.size());
  }
  std::vector<std::string> parts(1);
  int depth = 0;
  for (std::size_t i = 0; i < symbol.size(); ++i) {
    const char c = symbol[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth > 0 || c == '>' || c == ')') {
      if (c == '(' && depth == 1) break;
      continue;
    }
    if (c == ' ') break;
    if (c == ':' && i + 1 < symbol.size() && symbol[i + 1] == ':') {
      parts.emplace_back();
      ++i;
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

// The symbols a library exports: "nm -D --defined-only" demangled, one per line.
std::vector<std::string> exported_symbols(const std::filesystem::path& library) {
  const auto listed = run_process({"/usr/bin/nm", "-D", "--defined-only", "-C", library.string()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  std::vector<std::string> symbols;
  for (const auto& line : testing::lines_of(listed.out)) {
    // "ADDRESS TYPE NAME"
    const auto type = line.find(' ');
    if (type == std::string::npos || line.size() < type + 3) continue;
    symbols.push_back(line.substr(type + 3));
  }
  return symbols;
}

// Asio's per-process state, which cmake/tensorstream.map keeps global so that the application
// and the library share it: what each thread runs, and the error categories.
bool is_asio_process_state(const std::string& symbol) {
  static const std::regex state(
      "(guard variable for )?boost::asio::("
      "detail::call_stack<.*>::top_|detail::keyword_tss_ptr<.*>::value_|"
      "(ssl::)?error::get_[a-z]+_category\\(\\)::instance)");
  return std::regex_match(symbol, state);
}

TEST_F(InstalledPackage, TheLibrariesExportOnlyWhatTheirHeadersDeclare) {
  const auto include = std::filesystem::path(prefix()) / "include" / "tensorstream";
  const auto declared = identifiers_under(include);
  // The batchers are templates over the pipeline compiled into tensorstream_batching: its
  // detail classes are part of the ABI the headers instantiate, and the only detail exported.
  const auto batching_detail = identifiers_under(include / "batching" / "detail");
  const std::set<std::string> namespaces = {"tensorstream", "s3", "gcs", "store", "bench",
                                            "async", "traw", "detail"};
  for (const std::string library :
       {"libtensorstream_batching", "libtensorstream_core", "libtensorstream"}) {
    const auto path = find(library + ".so");
    ASSERT_FALSE(path.empty()) << library;
    const auto symbols = exported_symbols(path);
    EXPECT_GT(symbols.size(), 10u) << library;
    for (const auto& symbol : symbols) {
      if (symbol == "_init" || symbol == "_fini") continue;
      if (is_asio_process_state(symbol)) continue;
      const auto parts = qualified_name(symbol);
      ASSERT_FALSE(parts.empty());
      EXPECT_EQ(parts.front(), "tensorstream") << library << " exports " << symbol;
      if (parts.front() != "tensorstream") continue;
      std::size_t named = 1;
      bool in_detail = false;
      while (named < parts.size() && namespaces.contains(parts[named])) {
        in_detail = in_detail || parts[named] == "detail";
        ++named;
      }
      ASSERT_LT(named, parts.size()) << symbol;
      EXPECT_TRUE(declared.contains(parts[named]))
          << library << " exports " << symbol << ", which no installed header declares";
      EXPECT_TRUE(!in_detail || batching_detail.contains(parts[named]))
          << library << " exports the detail " << symbol;
    }
  }
}

TEST_F(InstalledPackage, AProgramThatOnlyBatchesNeedsOnlyTheBoostHeaders) {
  const std::string cmake_lists = R"(find_package(tensorstream REQUIRED COMPONENTS batching)
if(TARGET tensorstream::core OR TARGET tensorstream::tensorstream)
  message(FATAL_ERROR "COMPONENTS batching loaded more than tensorstream::batching")
endif()
add_executable(probe probe.cpp)
target_link_libraries(probe PRIVATE tensorstream::batching)
)";
  const std::string probe = R"(#include <tensorstream/batching/dynamic_batcher.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <vector>
namespace asio = boost::asio;
asio::awaitable<std::vector<int>> times_ten(std::vector<int> batch) {
  for (int& value : batch) value *= 10;
  co_return batch;
}
int main() {
  asio::io_context io;
  tensorstream::DynamicBatcher<int, int>::Options options;
  options.process_fn = times_ten;
  tensorstream::DynamicBatcher<int, int> batcher(io.get_executor(), options);
  batcher.start();
  int result = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(4);
    result = co_await future.get();
    co_await batcher.stop();
  }, asio::detached);
  io.run();
  std::printf("%d\n", result);
  return result == 40 ? 0 : 1;
}
)";
  // Every other dependency of the package is made unfindable: the batching component must not
  // ask for it.
  std::vector<std::string> unfindable;
  for (const std::string package : {"Torch", "OpenSSL", "simdjson", "pugixml", "PkgConfig"}) {
    unfindable.push_back("-DCMAKE_DISABLE_FIND_PACKAGE_" + package + "=ON");
  }
  const auto build = build_consumer("batching_only", cmake_lists, probe, unfindable);
  ASSERT_FALSE(HasFailure());

  const auto ran = run_process({(build / "probe").string()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "40\n");
  // It links the batching library and nothing of the rest of the package.
  const auto needed = run_process({"/usr/bin/readelf", "-d", (build / "probe").string()});
  ASSERT_EQ(needed.exit_code, 0) << needed.err;
  EXPECT_NE(needed.out.find("[libtensorstream_batching.so.0.1]"), std::string::npos)
      << needed.out;
  for (const std::string other : {"libtensorstream_core", "libtensorstream.so", "libssl",
                                  "liburing", "libtorch", "libc10"}) {
    EXPECT_EQ(needed.out.find(other), std::string::npos) << other << " in\n" << needed.out;
  }
}

TEST_F(InstalledPackage, AProgramOfTheCoreLibraryStreamsWithoutAStandardOfItsOwn) {
  const std::string cmake_lists = R"(find_package(tensorstream REQUIRED COMPONENTS core)
add_executable(probe probe.cpp)
target_link_libraries(probe PRIVATE tensorstream::core)
)";
  const std::string probe = R"(#include <tensorstream/streaming/raw_streamer.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  tensorstream::RawStreamer streamer(argv[argc - 1]);
  unsigned long long tensors = 0, bytes = 0;
  while (auto tensor = streamer.next_blocking()) {
    ++tensors;
    bytes += tensor->bytes().size();
  }
  std::printf("%llu tensors, %llu bytes\n", tensors, bytes);
}
)";
  const auto build = build_consumer("core_only", cmake_lists, probe);
  ASSERT_FALSE(HasFailure());
  const std::string model = (root_.path() / "model").string();
  ASSERT_EQ(testing::run_cli({"gen-model", model}).exit_code, 0);
  const auto ran = run_process({(build / "probe").string(), model});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "21 tensors, 3951104 bytes\n");
}

}  // namespace
}  // namespace tensorstream

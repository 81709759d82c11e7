// `tensorstream bench`: a 2 x 2 sweep against nginx and s3rver whose table, JSON, CSV and SVG
// agree with each other and with `stream` on the same settings; a failing cell; bad input.

#include <gtest/gtest.h>
#include <simdjson.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <pugixml.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/byte_size.hpp"
#include "storage/s3rver_test.hpp"
#include "streaming/checkpoint_files.hpp"
#include "support/child_process.hpp"
#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"

namespace tensorstream {
namespace {

using testing::read_file;
using testing::lines_of;
using testing::run_cli;
using testing::TempDir;

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, separator);) fields.push_back(field);
  return fields;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// The requests `stream` reports on its summary line: "[http, 12 requests, 0 retries, ...]".
std::uint64_t requests_of_stream(const std::vector<std::string>& arguments) {
  const auto result = run_cli(arguments);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::smatch match;
  const std::regex pattern(", ([0-9]+) requests, ");
  if (!std::regex_search(result.out, match, pattern)) {
    ADD_FAILURE() << result.out;
    return 0;
  }
  return std::stoull(match[1]);
}

class BenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(root_.path() / "tiny", {.preset = "tiny"});
    nginx_ = std::make_unique<testing::NginxServer>(
        testing::NginxServer::Options{.root = root_.path()});
    url_ = nginx_->base_url() + "/tiny/model.safetensors";
  }

  TempDir root_;
  TempDir out_;
  std::unique_ptr<testing::NginxServer> nginx_;
  std::string url_;
};

TEST_F(BenchCli, TheTableCsvAndSvgOfOneSweepAgree) {
  const auto csv = out_.path() / "sweep.csv";
  const auto svg = out_.path() / "sweep.svg";
  const auto result =
      run_cli({"bench", url_, "--chunk-size", "64KiB,1MiB", "--concurrency", "2,8", "--repeat",
               "3", "--ceiling", "--csv", csv.string(), "--svg", svg.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;

  std::uint64_t model_bytes = 0;
  const auto headers = inspect(url_);
  for (const auto& tensor : headers.at(0).header.tensors) model_bytes += tensor.byte_size();

  // On stderr, before the first run: what the sweep will read, and that a model this small
  // measures little. Then one line per run, 3 repeats of 4 cells and 2 ceilings.
  const auto progress = lines_of(result.err);
  ASSERT_EQ(progress.size(), 2u + 18) << result.err;
  EXPECT_EQ(progress[0], "tensorstream: bench: 4 cells and 2 ceilings, 18 runs of " +
                             format_byte_size(model_bytes) +
                             " each: " + format_byte_size(18 * model_bytes) + " to read");
  EXPECT_EQ(progress[1], "tensorstream: warning: each run reads only " +
                             format_byte_size(model_bytes) + " (" +
                             std::to_string(headers.at(0).header.tensors.size()) +
                             " tensors): runs this short measure start-up and latency more than "
                             "throughput, so the ranking is mostly noise; sweep a checkpoint of "
                             "at least 64.0 MiB (gen-model --preset llama-7b-4layers writes 2.0 "
                             "GiB)");
  EXPECT_TRUE(std::regex_match(progress[2], std::regex(R"(\[1/18\] .* x [28], run 1: .* GB/s)")))
      << progress[2];

  // The CSV's runs, per cell, each reading the whole model.
  const auto rows = lines_of(read_file(csv));
  ASSERT_EQ(rows.size(), 1u + 18);
  std::map<std::string, std::vector<double>> rates;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto fields = split(rows[i], ',');
    ASSERT_EQ(fields.size(), 13u) << rows[i];  // the empty error field ends the line
    EXPECT_EQ(fields[8], std::to_string(model_bytes)) << rows[i];
    rates[fields[0] + " " + fields[1] + " " + fields[2]].push_back(std::stod(fields[4]));
  }
  ASSERT_EQ(rates.size(), 6u);
  std::string best;
  double best_rate = -1;
  for (const auto& [key, values] : rates) {
    ASSERT_EQ(values.size(), 3u) << key;
    if (key.starts_with("stream") && median(values) > best_rate) {
      best_rate = median(values);
      best = key;
    }
  }

  // The table's grid holds the CSV's medians, the best marked.
  const auto lines = lines_of(result.out);
  ASSERT_GE(lines.size(), 7u) << result.out;
  EXPECT_EQ(lines[3], "chunk size           2         8  concurrency");
  const std::vector<std::string> keys{"stream 65536 2", "stream 65536 8", "stream 1048576 2",
                                      "stream 1048576 8", "ceiling 1048576 2",
                                      "ceiling 1048576 8"};
  for (std::size_t row = 0; row < 3; ++row) {
    const auto fields = split(lines[4 + row], ' ');
    std::vector<std::string> words;
    std::copy_if(fields.begin(), fields.end(), std::back_inserter(words),
                 [](const std::string& w) { return !w.empty(); });
    ASSERT_EQ(words.size(), 3u) << lines[4 + row];
    EXPECT_EQ(words[0], std::vector<std::string>({"64KiB", "1MiB", "ceiling"})[row]);
    for (std::size_t column = 0; column < 2; ++column) {
      const std::string key = keys[row * 2 + column];
      std::string value = words[1 + column];
      EXPECT_EQ(value.ends_with('*'), key == best) << lines[4 + row];
      if (value.ends_with('*')) value.pop_back();
      EXPECT_NEAR(std::stod(value), median(rates[key]), 0.0015) << key;
    }
  }
  const auto best_fields = split(best, ' ');
  const std::string chunk_flag = best_fields[1] == "65536" ? "64KiB" : "1MiB";
  EXPECT_TRUE(lines[lines.size() - 2].starts_with("best: --chunk-size " + chunk_flag +
                                                  " --concurrency " + best_fields[2] + ", "))
      << lines[lines.size() - 2];
  EXPECT_EQ(lines.back(), "TENSORSTREAM_CHUNK_SIZE=" + best_fields[1] +
                              " TENSORSTREAM_MAX_CONCURRENCY=" + best_fields[2]);

  // The SVG labels the same medians and outlines the same best cell.
  pugi::xml_document document;
  ASSERT_TRUE(document.load_file(svg.c_str()));
  std::size_t labels = 0;
  for (const pugi::xml_node node : document.child("svg").children("text")) {
    if (std::string(node.attribute("class").value()) != "value") continue;
    const std::string key = std::string("stream ") + node.attribute("data-chunk-size").value() +
                            " " + node.attribute("data-concurrency").value();
    EXPECT_NEAR(std::stod(node.text().get()), median(rates[key]), 0.0015) << key;
    ++labels;
  }
  EXPECT_EQ(labels, 4u);
  const pugi::xml_node outline =
      document.child("svg").find_child_by_attribute("rect", "class", "best");
  EXPECT_EQ(std::string("stream ") + outline.attribute("data-chunk-size").value() + " " +
                outline.attribute("data-concurrency").value(),
            best);
}

TEST_F(BenchCli, JsonAgreesWithStreamOnTheSameSettings) {
  const auto result = run_cli({"bench", url_, "--chunk-size", "64KiB,1MiB", "--concurrency",
                               "2,8", "--repeat", "1", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  simdjson::dom::parser parser;
  const simdjson::padded_string text(result.out);
  const simdjson::dom::element json = parser.parse(text);
  const simdjson::dom::array cells = json["cells"];
  ASSERT_EQ(cells.size(), 4u);

  const auto summary = run_cli({"stream", url_, "--json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  const simdjson::padded_string last(lines_of(summary.out).back());
  simdjson::dom::parser summary_parser;
  const simdjson::dom::element totals = summary_parser.parse(last)["summary"];
  EXPECT_EQ(std::uint64_t(json["bytes"]), std::uint64_t(totals["bytes"]));
  EXPECT_EQ(std::uint64_t(json["tensors"]), std::uint64_t(totals["tensors"]));

  for (const simdjson::dom::element cell : cells) {
    const std::string chunk = std::to_string(std::uint64_t(cell["chunk_size"]));
    const std::string concurrency = std::to_string(std::uint64_t(cell["concurrency"]));
    SCOPED_TRACE(chunk + " x " + concurrency);
    ASSERT_FALSE(bool(cell["failed"]));
    const simdjson::dom::element run = simdjson::dom::array(cell["runs"]).at(0);
    EXPECT_EQ(std::uint64_t(run["bytes"]), std::uint64_t(totals["bytes"]));
    EXPECT_EQ(std::uint64_t(run["requests"]),
              requests_of_stream({"stream", url_, "--chunk-size", chunk, "--concurrency",
                                  concurrency}));
  }
}

TEST_F(BenchCli, MaxBytesAndIncludeStreamTheChosenTensorsOnly) {
  const auto headers = inspect(url_);
  const auto& tensors = headers.at(0).header.tensors;
  const std::uint64_t two = tensors[0].byte_size() + tensors[1].byte_size();
  const auto result =
      run_cli({"bench", url_, "--chunk-size", "1MiB", "--concurrency", "4", "--repeat", "1",
               "--max-bytes", std::to_string(two), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  simdjson::dom::parser parser;
  const simdjson::padded_string text(result.out);
  const simdjson::dom::element json = parser.parse(text);
  EXPECT_EQ(std::uint64_t(json["tensors"]), 2u);
  EXPECT_EQ(std::uint64_t(json["bytes"]), two);
  EXPECT_EQ(std::uint64_t(json["model_tensors"]), tensors.size());

  const auto chosen = run_cli({"bench", url_, "--chunk-size", "1MiB", "--concurrency", "4",
                               "--repeat", "1", "--include", "lm_head.weight", "--json"});
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  simdjson::dom::parser chosen_parser;
  const simdjson::padded_string chosen_text(chosen.out);
  const simdjson::dom::element chosen_json = chosen_parser.parse(chosen_text);
  EXPECT_EQ(std::uint64_t(chosen_json["tensors"]), 1u);
  EXPECT_EQ(std::uint64_t(chosen_json["model_tensors"]), 1u);
}

TEST_F(BenchCli, BadInputIsOneLineErrorBeforeTheSweepStarts) {
  const auto csv = out_.path() / "sweep.csv";
  const std::vector<std::pair<std::vector<std::string>, std::string>> usage_errors{
      {{"--chunk-size", ""}, "--chunk-size: the list has an empty item"},
      {{"--chunk-size", "0"}, "--chunk-size: 0 is below the minimum of 64KiB (each chunk is a request of its own)"},
      {{"--chunk-size", "1MiB,lots"}, "--chunk-size: invalid size 'lots' (examples: 4096, 512KiB, 16MiB, 2GiB)"},
      {{"--concurrency", "4,0"}, "--concurrency: 0 is not a positive number"},
      {{"--concurrency", "x"}, "--concurrency: 'x' is not a number"},
      {{"--repeat", "0"}, "--repeat: 0 is not a positive number (see tensorstream bench --help)"},
      {{"--max-bytes", "0"}, "--max-bytes: 0 is not a positive size"},
      {{"--tp", "2", "--rank", "2"}, "--rank 2 is outside --tp 2 (ranks 0 to 1)"},
      {{"--memory-limit", "0"}, "--memory-limit: 0 is not a positive size"},
      {{"--svg", "/nonexistent/dir/h.svg"},
       "--svg: cannot write /nonexistent/dir/h.svg: /nonexistent/dir is not a writable directory"},
  };
  for (const auto& [flags, message] : usage_errors) {
    std::vector<std::string> arguments{"bench", url_, "--csv", csv.string()};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    const auto result = run_cli(arguments);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.err, "tensorstream: error: " + message + "\n");
    EXPECT_EQ(result.out, "");
  }
  const std::string missing = nginx_->base_url() + "/absent/model.safetensors";
  const auto result = run_cli({"bench", missing, "--csv", csv.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "tensorstream: error: " + missing + ": HTTP 404 Not Found\n");
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(std::filesystem::exists(csv));
}

TEST(BenchCliFault, AFailingCellIsShownAsFailedAndTheSweepGoesOn) {
  constexpr std::uint64_t mib = 1024 * 1024;
  TempDir dir;
  testing::write_checkpoint(dir.path() / "model.safetensors", {{"weight", 3 * mib}});
  const std::uint64_t data_start =
      inspect((dir.path() / "model.safetensors").string()).at(0).header.data_start;
  testing::FaultServer server(
      "/model.safetensors", read_file(dir.path() / "model.safetensors"),
      {.fail_status = 404,
       .fail_range = "bytes=" + std::to_string(data_start + mib) + "-" +
                     std::to_string(data_start + 2 * mib - 1)});
  const std::string url = server.base_url() + "/model.safetensors";
  const auto svg = dir.path() / "sweep.svg";
  const auto result = run_cli({"bench", url, "--chunk-size", "1MiB,4MiB", "--concurrency", "2",
                               "--repeat", "2", "--svg", svg.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_GE(lines.size(), 10u) << result.out;
  EXPECT_EQ(lines[4], "1MiB           failed ");
  EXPECT_TRUE(lines[5].starts_with("4MiB   ") && lines[5].ends_with("*")) << lines[5];
  EXPECT_EQ(lines[8], "1MiB                  2  failed: " + url +
                          ": HTTP 404 Not Found: injected failure");
  EXPECT_TRUE(lines[lines.size() - 2].starts_with("best: --chunk-size 4MiB --concurrency 2, "));
  // Progress says so too, and the failed cell is not run again.
  std::vector<std::string> progress;
  for (const auto& line : lines_of(result.err)) {
    if (line.starts_with("[")) progress.push_back(line);
  }
  ASSERT_EQ(progress.size(), 3u) << result.err;
  EXPECT_EQ(std::count_if(progress.begin(), progress.end(),
                          [](const std::string& line) {
                            return line.find("1.0 MiB chunks x 2, run 1: failed: ") !=
                                   std::string::npos;
                          }),
            1);

  pugi::xml_document document;
  ASSERT_TRUE(document.load_file(svg.c_str()));
  const pugi::xml_node failed =
      document.child("svg").find_child_by_attribute("rect", "class", "cell failed");
  ASSERT_TRUE(failed);
  EXPECT_EQ(std::string(failed.attribute("data-chunk-size").value()), "1048576");
  EXPECT_EQ(std::string(failed.child("title").text().get()),
            url + ": HTTP 404 Not Found: injected failure");
}

// The first Ctrl-C ends the sweep after the run in flight; the report, the CSV and the SVG hold
// the runs that finished, and the exit status says the sweep did not.
TEST(BenchCliInterrupt, CtrlCReportsAndWritesTheRunsThatFinished) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  const auto csv = dir.path() / "sweep.csv";
  const auto svg = dir.path() / "sweep.svg";
  const auto log = dir.path() / "bench.log";
  testing::ChildProcess bench({TENSORSTREAM_CLI_PATH, "bench",
                               (dir.path() / "model.safetensors").string(), "--chunk-size",
                               "64KiB,1MiB", "--concurrency", "1,4", "--repeat", "100000", "--csv",
                               csv.string(), "--svg", svg.string()},
                              log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (testing::read_text_file(log).find("\n[5/") == std::string::npos) {
    ASSERT_FALSE(bench.exited()) << testing::read_text_file(log);
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << testing::read_text_file(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(bench.pid(), SIGINT), 0);
  const int status = bench.wait();
  const std::string output = testing::read_text_file(log);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;

  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      output, match,
      std::regex("\ntensorstream: error: bench interrupted after ([0-9]+) runs of 400000: the "
                 "report holds the runs that finished\n$")))
      << output;
  const std::size_t finished = std::stoul(match[1]);
  EXPECT_GE(finished, 5u);
  EXPECT_NE(output.find("tensorstream: bench: interrupted; reporting after the run in flight "
                        "(Ctrl-C again to quit at once)\n"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("interrupted after " + std::to_string(finished) +
                        " of 400000 runs: each cell's median is of the runs it finished\n"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("\nbest: --chunk-size "), std::string::npos) << output;
  EXPECT_EQ(lines_of(read_file(csv)).size(), 1 + finished);
  pugi::xml_document document;
  ASSERT_TRUE(document.load_file(svg.c_str()));
  EXPECT_TRUE(document.child("svg").find_child_by_attribute("rect", "class", "best"));
}

class BenchCliS3 : public s3::testing::S3rverTest {};

TEST_F(BenchCliS3, SweepsABucketPrefix) {
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny", .shards = 2, .index = true});
  s3rver_->put_directory("models", "tiny/", model.path());
  const auto result = run_cli({"bench", "s3://models/tiny/", "--chunk-size", "256KiB,1MiB",
                               "--concurrency", "2,8", "--repeat", "1", "--ceiling", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  simdjson::dom::parser parser;
  const simdjson::padded_string text(result.out);
  const simdjson::dom::element json = parser.parse(text);
  EXPECT_EQ(std::uint64_t(json["files"]), 2u);
  EXPECT_EQ(std::uint64_t(json["bytes"]), std::uint64_t(json["model_bytes"]));
  for (const simdjson::dom::element cell : simdjson::dom::array(json["cells"])) {
    EXPECT_FALSE(bool(cell["failed"])) << cell;
    EXPECT_EQ(std::uint64_t(simdjson::dom::array(cell["runs"]).at(0)["bytes"]),
              std::uint64_t(json["bytes"]));
  }
  EXPECT_EQ(simdjson::dom::array(json["ceilings"]).size(), 2u);
  EXPECT_FALSE(json["best"].is_null());
}

}  // namespace
}  // namespace tensorstream

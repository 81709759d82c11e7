// The table, JSON, CSV and SVG of one sweep result say the same things: the JSON and CSV parsed
// back, the SVG read as XML and rendered by rsvg-convert.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <pugixml.hpp>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/bench/sweep_report.hpp"

namespace tensorstream::bench {
namespace {

using testing::MiB;
SweepRun run_at(std::size_t repeat, double rate) {
  SweepRun run;
  run.repeat = repeat;
  run.gigabytes_per_second = rate;
  run.bytes = 2'000'000'000;
  run.seconds = 2.0 / rate;
  run.first_tensor_seconds = 0.0125;
  run.cpu_seconds = 0.5;
  run.requests = 120;
  run.connections = 4;
  run.peak_memory = 256 * MiB;
  return run;
}

// 2 chunk sizes x 2 concurrencies, 3 repeats; the 1 MiB x 16 cell failed at its first run; the
// best is 16 MiB x 16 at a median of 2.5 GB/s.
SweepResult example() {
  SweepResult result;
  result.url = "s3://models/llama-70b/";
  result.host = "node-1";
  result.started = std::chrono::system_clock::from_time_t(1'796'000'000);
  result.files = 2;
  result.tensors = 30;
  result.bytes = 2'000'000'000;
  result.model_tensors = 291;
  result.model_bytes = 16'000'000'000;
  result.io_mode = "http";
  result.repeat = 3;
  result.seed = 42;
  result.chunk_sizes = {1 * MiB, 16 * MiB};
  result.concurrencies = {4, 16};
  result.cells = {
      {1 * MiB, 4, {run_at(0, 1.0), run_at(1, 1.2), run_at(2, 0.9)}},
      {1 * MiB, 16, {run_at(0, 0)}},
      {16 * MiB, 4, {run_at(0, 2.0), run_at(1, 1.5), run_at(2, 1.75)}},
      {16 * MiB, 16, {run_at(0, 2.5), run_at(1, 2.6), run_at(2, 2.4)}},
  };
  result.cells[1].runs[0].error =
      "s3://models/llama-70b/model-00002-of-00030.safetensors: HTTP 503 Slow Down, \"Please "
      "reduce your request rate\" (after 9 retries)";
  result.cells[1].runs[0].seconds = 0;
  result.ceilings = {{4, 16 * MiB, {run_at(0, 2.0), run_at(1, 2.0), run_at(2, 2.0)}},
                     {16, 16 * MiB, {run_at(0, 3.0), run_at(1, 3.25), run_at(2, 3.5)}}};
  return result;
}

// The lines of the SVG's text elements of one class, in order.
std::vector<std::string> text_lines(const pugi::xml_node& root, const char* css_class) {
  std::vector<std::string> lines;
  for (const pugi::xml_node node : root.children("text")) {
    if (std::string(node.attribute("class").value()) == css_class) {
      lines.emplace_back(node.text().get());
    }
  }
  return lines;
}

std::string joined_text(const pugi::xml_node& root, const char* css_class) {
  std::string text;
  for (const auto& line : text_lines(root, css_class)) text += line;
  return text;
}

TEST(SweepReport, TheCellSummariesAreMediansAndSpreads) {
  const SweepResult result = example();
  EXPECT_DOUBLE_EQ(result.cells[0].median_gigabytes_per_second(), 1.0);
  EXPECT_DOUBLE_EQ(result.cells[0].min_gigabytes_per_second(), 0.9);
  EXPECT_DOUBLE_EQ(result.cells[0].max_gigabytes_per_second(), 1.2);
  EXPECT_DOUBLE_EQ(result.cells[0].cpu_seconds_per_gigabyte(), 0.25);
  EXPECT_TRUE(result.cells[1].failed());
  EXPECT_EQ(result.best(), &result.cells[3]);
  EXPECT_EQ(result.best_environment(),
            "TENSORSTREAM_CHUNK_SIZE=16777216 TENSORSTREAM_MAX_CONCURRENCY=16");
  EXPECT_DOUBLE_EQ(result.ceiling_at(16)->median_gigabytes_per_second(), 3.25);
}

// docs/tuning.md shows this table.
TEST(SweepReport, TheTableShowsTheGridTheDetailsAndWhatToUse) {
  EXPECT_EQ(
      sweep_table(example()),
      "bench s3://models/llama-70b/: 30 tensors, 1.9 GiB (the first of 291, 14.9 GiB) in 2 "
      "files, http, 3 runs per cell\n"
      "GB/s, the median of each cell's runs; * marks the best\n"
      "\n"
      "chunk size           4        16  concurrency\n"
      "1MiB            1.000    failed \n"
      "16MiB           1.750     2.500*\n"
      "ceiling         2.000     3.250 \n"
      "\n"
      "chunk size  concurrency     GB/s  min-max          ceiling  first tensor  CPU s/GB  "
      "requests  retries  peak memory\n"
      "1MiB                  4    1.000  0.900-1.200        50 %       12.5 ms      0.25       "
      "120        0    256.0 MiB\n"
      "1MiB                 16  failed: s3://models/llama-70b/model-00002-of-00030.safetensors: "
      "HTTP 503 Slow Down, \"Please reduce your request rate\" (after 9 retries)\n"
      "16MiB                 4    1.750  1.500-2.000        88 %       12.5 ms      0.25       "
      "120        0    256.0 MiB\n"
      "16MiB                16    2.500  2.400-2.600        77 %       12.5 ms      0.25       "
      "120        0    256.0 MiB\n"
      "ceiling               4    2.000  reads of 16.0 MiB, 0.25 CPU s/GB\n"
      "ceiling              16    3.250  reads of 16.0 MiB, 0.25 CPU s/GB\n"
      "\n"
      "best: --chunk-size 16MiB --concurrency 16, 2.500 GB/s, 77 % of the ceiling\n"
      "TENSORSTREAM_CHUNK_SIZE=16777216 TENSORSTREAM_MAX_CONCURRENCY=16\n");
}

TEST(SweepReport, WithEveryCellFailedThereIsNothingToRecommend) {
  SweepResult result = example();
  for (auto& cell : result.cells) cell.runs = {cell.runs[0]};
  for (auto& cell : result.cells) cell.runs[0].error = "refused";
  EXPECT_EQ(result.best(), nullptr);
  EXPECT_EQ(result.best_environment(), "");
  EXPECT_EQ(testing::lines_of(sweep_table(result)).back(),
            "every cell failed: no setting to recommend");
  simdjson::dom::parser parser;
  const simdjson::padded_string json(sweep_json(result));
  EXPECT_TRUE(parser.parse(json)["best"].is_null());
}

// A sweep ended early (Ctrl-C): the cells that never ran say so in every form, and the medians
// and the best are of the runs that finished.
TEST(SweepReport, AnInterruptedSweepShowsWhatFinishedAndWhatNeverRan) {
  SweepResult result = example();
  result.interrupted = true;
  result.runs_planned = 17;
  result.runs_finished = 5;
  result.cells[0].runs.clear();          // 1 MiB x 4 never ran
  result.cells[3].runs.resize(1);        // 16 MiB x 16 ran once, at 2.5 GB/s
  result.ceilings[1].runs.clear();       // nor did the ceiling at 16
  const SweepCell* best = result.best();
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->chunk_size, 16 * MiB);
  EXPECT_EQ(best->concurrency, 16u);

  const auto lines = testing::lines_of(sweep_table(result));
  ASSERT_GE(lines.size(), 16u);
  EXPECT_EQ(lines[2],
            "interrupted after 5 of 17 runs: each cell's median is of the runs it finished");
  EXPECT_EQ(lines[5], "1MiB                -    failed ");
  EXPECT_EQ(lines[7], "ceiling         2.000         - ");
  EXPECT_EQ(lines[10], "1MiB                  4  not run");
  EXPECT_EQ(lines[15], "ceiling              16  not run");

  simdjson::dom::parser parser;
  const simdjson::padded_string json(sweep_json(result));
  const simdjson::dom::element root = parser.parse(json);
  EXPECT_TRUE(root["interrupted"].get_bool().value());
  EXPECT_EQ(root["runs_planned"].get_uint64().value(), 17u);
  EXPECT_EQ(root["runs_finished"].get_uint64().value(), 5u);
  const simdjson::dom::element never_ran = root["cells"].at(0);
  EXPECT_FALSE(never_ran["failed"].get_bool().value());
  EXPECT_EQ(never_ran["gb_per_s"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(never_ran["runs"].get_array().size(), 0u);

  pugi::xml_document document;
  ASSERT_TRUE(document.load_string(sweep_svg(result).c_str()));
  const pugi::xml_node svg = document.child("svg");
  const pugi::xml_node not_run = svg.find_child_by_attribute("rect", "class", "cell not-run");
  ASSERT_TRUE(not_run);
  EXPECT_EQ(std::string(not_run.attribute("data-chunk-size").value()), "1048576");
  EXPECT_EQ(std::string(not_run.attribute("data-concurrency").value()), "4");
  EXPECT_THAT(joined_text(svg, "subtitle"),
              ::testing::HasSubstr("interrupted after 5 of 17 runs: each cell's median is of "
                                   "the runs it finished"));
}

TEST(SweepReport, TheJsonHoldsEveryCellEveryRunAndTheBest) {
  const SweepResult result = example();
  const simdjson::padded_string text(sweep_json(result));
  simdjson::dom::parser parser;
  const simdjson::dom::element json = parser.parse(text);
  EXPECT_EQ(std::string_view(json["url"]), result.url);
  EXPECT_EQ(std::string_view(json["host"]), "node-1");
  EXPECT_EQ(std::string_view(json["started"]), "2026-11-30T00:53:20Z");
  EXPECT_EQ(std::uint64_t(json["bytes"]), result.bytes);
  EXPECT_EQ(std::uint64_t(json["model_bytes"]), result.model_bytes);
  EXPECT_EQ(std::uint64_t(json["seed"]), 42u);
  const simdjson::dom::array cells = json["cells"];
  ASSERT_EQ(cells.size(), 4u);
  std::size_t i = 0;
  for (const simdjson::dom::element cell : cells) {
    const SweepCell& expected = result.cells[i++];
    EXPECT_EQ(std::uint64_t(cell["chunk_size"]), expected.chunk_size);
    EXPECT_EQ(std::uint64_t(cell["concurrency"]), expected.concurrency);
    EXPECT_EQ(bool(cell["failed"]), expected.failed());
    EXPECT_EQ(simdjson::dom::array(cell["runs"]).size(), expected.runs.size());
    if (expected.failed()) {
      EXPECT_EQ(std::string_view(cell["error"]), expected.error());
    } else {
      EXPECT_DOUBLE_EQ(double(cell["gb_per_s"]), expected.median_gigabytes_per_second());
      EXPECT_NEAR(double(cell["ceiling_ratio"]),
                  expected.median_gigabytes_per_second() /
                      result.ceiling_at(expected.concurrency)->median_gigabytes_per_second(),
                  1e-6);
    }
  }
  EXPECT_EQ(simdjson::dom::array(json["ceilings"]).size(), 2u);
  EXPECT_EQ(std::uint64_t(json["best"]["chunk_size"]), 16 * MiB);
  EXPECT_EQ(std::uint64_t(json["best"]["concurrency"]), 16u);
  EXPECT_EQ(std::string_view(json["best"]["environment"]), result.best_environment());
}

TEST(SweepReport, TheCsvHasOneRowPerRun) {
  const auto rows = testing::lines_of(sweep_csv(example()));
  ASSERT_EQ(rows.size(), 1u + 3 + 1 + 3 + 3 + 3 + 3);
  EXPECT_EQ(rows[0],
            "kind,chunk_size,concurrency,repeat,gb_per_s,seconds,first_tensor_ms,cpu_seconds,"
            "bytes,requests,retries,connections,peak_memory,error");
  EXPECT_EQ(rows[1], "stream,1048576,4,0,1.000000,2.000000,12.500,0.500000,2000000000,120,0,4,"
                     "268435456,");
  EXPECT_EQ(rows[4], "stream,1048576,16,0,0.000000,0.000000,12.500,0.500000,2000000000,120,0,4,"
                     "268435456,\"s3://models/llama-70b/model-00002-of-00030.safetensors: HTTP 503 Slow "
                     "Down, \"\"Please reduce your request rate\"\" (after 9 retries)\"");
  EXPECT_EQ(rows[11], "ceiling,16777216,4,0,2.000000,1.000000,12.500,0.500000,2000000000,120,0,"
                      "4,268435456,");
}

TEST(SweepReport, TheSvgIsAHeatmapOfTheMediansWithTheBestOutlined) {
  SweepResult result = example();
  result.url = "s3://bucket/llama & <friends>/";  // escaped in the SVG
  const std::string svg = sweep_svg(result);
  pugi::xml_document document;
  ASSERT_TRUE(document.load_string(svg.c_str())) << svg;
  const pugi::xml_node root = document.child("svg");
  ASSERT_TRUE(root);
  EXPECT_EQ(joined_text(root, "title"), "tensorstream bench " + result.url);
  // The subtitle is wider than the picture, so it wraps; its lines read as one.
  EXPECT_THAT(joined_text(root, "subtitle"),
              ::testing::StartsWith("30 tensors, 1.9 GiB (the first of 291, 14.9 GiB) in 2 files, "
                                  "http; median GB/s of 3 runs per cell"));
  EXPECT_GT(text_lines(root, "subtitle").size(), 2U);
  EXPECT_THAT(joined_text(root, "note"), ::testing::HasSubstr("% of ceiling: the cell's median over "
                                                            "that of plain parallel range reads"));

  std::vector<std::string> cells;
  std::vector<std::string> values;
  std::vector<std::string> colours;
  std::string best;
  for (const pugi::xml_node node : root.children()) {
    const std::string classes = node.attribute("class").value();
    const std::string where = std::string(node.attribute("data-chunk-size").value()) + "x" +
                              node.attribute("data-concurrency").value();
    if (classes.starts_with("cell")) {
      cells.push_back(where + " " + classes);
      colours.push_back(node.attribute("fill").value());
    }
    if (classes == "value") values.push_back(where + " " + node.text().get());
    if (classes == "best") best = where;
  }
  EXPECT_EQ(cells, (std::vector<std::string>{"1048576x4 cell", "1048576x16 cell failed",
                                             "16777216x4 cell", "16777216x16 cell"}));
  EXPECT_EQ(values, (std::vector<std::string>{"1048576x4 1.000", "1048576x16 failed",
                                              "16777216x4 1.750", "16777216x16 2.500"}));
  EXPECT_EQ(best, "16777216x16");
  // Shades in proportion to the best cell's rate on a scale from zero, so that 1.0 and 1.75 GB/s
  // sit at 40 % and 70 % of viridis rather than at its two ends; the failed cell grey.
  EXPECT_EQ(colours, (std::vector<std::string>{"#2b788c", "#d0d0d0", "#52be6a", "#fde725"}));
  // The legend's colour bar runs from zero to the best rate.
  EXPECT_EQ(text_lines(root, "legend-label"), (std::vector<std::string>{"2.500", "0", "GB/s"}));
}

TEST(SweepReport, ALongTitleWrapsInsideThePicture) {
  SweepResult result = example();
  result.url = "https://weights.example.com/organisation/team/llama-3.1-70b-instruct/"
               "checkpoints/step-000120000/consolidated/";
  result.ceilings.clear();
  pugi::xml_document document;
  ASSERT_TRUE(document.load_string(sweep_svg(result).c_str()));
  const pugi::xml_node root = document.child("svg");
  const double width = root.attribute("width").as_double();
  const auto lines = text_lines(root, "title");
  ASSERT_GT(lines.size(), 1U);
  for (const auto& line : lines) {
    // 16 px bold DejaVu Sans is at most about 10 px per character.
    EXPECT_LE(16 + 10.0 * static_cast<double>(line.size()), width) << line;
  }
  EXPECT_EQ(joined_text(root, "title"), "tensorstream bench " + result.url);
  // Broken after a '/', where the URL breaks naturally.
  EXPECT_TRUE(lines.front().ends_with("/")) << lines.front();
  // Without ceilings there is no percentage to explain.
  EXPECT_EQ(joined_text(root, "note"), "");
}

TEST(SweepReport, RsvgConvertRendersTheSvg) {
  if (!std::filesystem::exists("/usr/bin/rsvg-convert")) {
    TENSORSTREAM_SKIP_UNLESS_CI("rsvg-convert is not installed (Debian: librsvg2-bin)");
  }
  testing::TempDir dir;
  const auto svg = dir.path() / "heatmap.svg";
  std::ofstream(svg) << sweep_svg(example());
  const auto png = dir.path() / "heatmap.png";
  const auto result =
      testing::run_process({"/usr/bin/rsvg-convert", svg.string(), "-o", png.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::ifstream in(png, std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
}

}  // namespace
}  // namespace tensorstream::bench

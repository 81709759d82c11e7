#include "tensorstream/bench/sweep_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

#include "base/byte_size.hpp"
#include "base/json_string.hpp"

namespace tensorstream::bench {
namespace {

std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
  va_list arguments;
  va_start(arguments, pattern);
  va_list again;
  va_copy(again, arguments);
  const int length = std::vsnprintf(nullptr, 0, pattern, arguments);
  va_end(arguments);
  std::string text(static_cast<std::size_t>(std::max(length, 0)), '\0');
  std::vsnprintf(text.data(), text.size() + 1, pattern, again);
  va_end(again);
  return text;
}

// "1MiB", "512KiB", "1000": how --chunk-size takes it, and short enough for a column.
std::string size_flag(std::uint64_t bytes) {
  static constexpr std::array<const char*, 4> units{"KiB", "MiB", "GiB", "TiB"};
  std::string unit;
  for (const char* name : units) {
    if (bytes < 1024 || bytes % 1024 != 0) break;
    bytes /= 1024;
    unit = name;
  }
  return std::to_string(bytes) + unit;
}

std::string utc_time(std::chrono::system_clock::time_point when, const char* pattern) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[64];
  std::strftime(text, sizeof text, pattern, &parts);
  return text;
}

std::string percent_of_ceiling(const SweepResult& result, const SweepCell& cell) {
  const SweepCeiling* ceiling = result.ceiling_at(cell.concurrency);
  if (!ceiling || ceiling->failed() || ceiling->median_gigabytes_per_second() <= 0) return "";
  return format("%.0f %%", 100 * cell.median_gigabytes_per_second() /
                               ceiling->median_gigabytes_per_second());
}

std::string what_was_read(const SweepResult& result) {
  std::string text = std::to_string(result.tensors) + " tensors, " +
                     format_byte_size(result.bytes);
  if (result.bytes != result.model_bytes) {
    text += " (the first of " + std::to_string(result.model_tensors) + ", " +
            format_byte_size(result.model_bytes) + ")";
  }
  return text + " in " + std::to_string(result.files) + (result.files == 1 ? " file" : " files");
}

// "interrupted after 7 of 24 runs: each cell's median is of the runs it finished"
std::string interruption(const SweepResult& result) {
  return "interrupted after " + std::to_string(result.runs_finished) + " of " +
         std::to_string(result.runs_planned) +
         " runs: each cell's median is of the runs it finished";
}

// What a grid shows of a cell or ceiling: its median GB/s, "failed", or `not_run` for one that
// an interrupted sweep never reached.
template <class Measured>
std::string grid_value(const Measured& measured, const char* not_run) {
  if (measured.failed()) return "failed";
  if (measured.runs.empty()) return not_run;
  return format("%.3f", measured.median_gigabytes_per_second());
}

std::string pad_left(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

std::string pad_right(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

// XML character data and attribute values alike.
std::string xml_escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

void append_run_json(std::string& out, const SweepRun& run) {
  out += format("{\"repeat\":%zu,\"gb_per_s\":%.6f,\"seconds\":%.6f,\"first_tensor_ms\":%.3f,"
                "\"cpu_seconds\":%.6f,\"bytes\":%llu,\"requests\":%llu,\"retries\":%llu,"
                "\"connections\":%llu,\"peak_memory\":%llu,\"error\":",
                run.repeat, run.gigabytes_per_second, run.seconds, run.first_tensor_seconds * 1e3,
                run.cpu_seconds, static_cast<unsigned long long>(run.bytes),
                static_cast<unsigned long long>(run.requests),
                static_cast<unsigned long long>(run.retries),
                static_cast<unsigned long long>(run.connections),
                static_cast<unsigned long long>(run.peak_memory));
  out += run.error.empty() ? "null" : json_string(run.error);
  out += '}';
}

void append_runs_json(std::string& out, const std::vector<SweepRun>& runs) {
  out += "\"runs\":[";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i) out += ',';
    append_run_json(out, runs[i]);
  }
  out += ']';
}

// Viridis, dark (slow) to light (fast): readable in colour and in grey, and by the colour-blind.
std::string heat_colour(double t) {
  static constexpr std::array<std::array<double, 3>, 5> stops{{{68, 1, 84},
                                                               {59, 82, 139},
                                                               {33, 145, 140},
                                                               {94, 201, 98},
                                                               {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
  const std::size_t low = std::min<std::size_t>(static_cast<std::size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(low);
  std::array<int, 3> rgb{};
  for (std::size_t i = 0; i < 3; ++i) {
    rgb[i] = static_cast<int>(std::lround(stops[low][i] + f * (stops[low + 1][i] - stops[low][i])));
  }
  return format("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

}  // namespace

std::string sweep_table(const SweepResult& result) {
  std::string out = "bench " + result.url + ": " + what_was_read(result) + ", " +
                    result.io_mode + ", " + std::to_string(result.repeat) +
                    (result.repeat == 1 ? " run" : " runs") + " per cell\n";
  out += "GB/s, the median of each cell's runs; * marks the best\n";
  if (result.interrupted) out += interruption(result) + '\n';
  out += '\n';

  constexpr std::size_t label_width = 12;
  constexpr std::size_t column_width = 10;
  const SweepCell* best = result.best();
  out += pad_right("chunk size", label_width);
  for (const auto concurrency : result.concurrencies) {
    out += pad_left(std::to_string(concurrency), column_width);
  }
  out += "  concurrency\n";
  for (std::size_t i = 0; i < result.chunk_sizes.size(); ++i) {
    out += pad_right(size_flag(result.chunk_sizes[i]), label_width);
    for (std::size_t j = 0; j < result.concurrencies.size(); ++j) {
      const SweepCell& cell = result.cells[i * result.concurrencies.size() + j];
      out += pad_left(grid_value(cell, "-") + (&cell == best ? "*" : " "), column_width);
    }
    out += '\n';
  }
  if (!result.ceilings.empty()) {
    out += pad_right("ceiling", label_width);
    for (const auto& ceiling : result.ceilings) {
      out += pad_left(grid_value(ceiling, "-") + " ", column_width);
    }
    out += '\n';
  }

  out += "\nchunk size  concurrency     GB/s  min-max          ceiling  first tensor  CPU s/GB"
         "  requests  retries  peak memory\n";
  for (const auto& cell : result.cells) {
    out += pad_right(size_flag(cell.chunk_size), label_width);
    out += pad_left(std::to_string(cell.concurrency), 11);
    if (cell.failed()) {
      out += "  failed: " + cell.error() + '\n';
      continue;
    }
    if (cell.runs.empty()) {
      out += "  not run\n";
      continue;
    }
    out += pad_left(format("%.3f", cell.median_gigabytes_per_second()), 9);
    out += "  " + pad_right(format("%.3f-%.3f", cell.min_gigabytes_per_second(),
                                   cell.max_gigabytes_per_second()),
                            13);
    out += pad_left(percent_of_ceiling(result, cell), 10);
    out += pad_left(format("%.1f ms", cell.median_first_tensor_seconds() * 1e3), 14);
    out += pad_left(format("%.2f", cell.cpu_seconds_per_gigabyte()), 10);
    out += pad_left(std::to_string(cell.requests()), 10);
    out += pad_left(std::to_string(cell.retries()), 9);
    out += pad_left(format_byte_size(cell.peak_memory()), 13);
    out += '\n';
  }
  for (const auto& ceiling : result.ceilings) {
    out += pad_right("ceiling", label_width) + pad_left(std::to_string(ceiling.concurrency), 11);
    if (ceiling.failed()) {
      out += "  failed: " + ceiling.error() + '\n';
      continue;
    }
    if (ceiling.runs.empty()) {
      out += "  not run\n";
      continue;
    }
    out += pad_left(format("%.3f", ceiling.median_gigabytes_per_second()), 9);
    out += format("  reads of %s, %.2f CPU s/GB\n", format_byte_size(ceiling.range_size).c_str(),
                  ceiling.cpu_seconds_per_gigabyte());
  }

  out += '\n';
  if (!best) {
    return out + (result.interrupted ? "no cell finished a run: no setting to recommend\n"
                                     : "every cell failed: no setting to recommend\n");
  }
  const std::string ceiling = percent_of_ceiling(result, *best);
  out += format("best: --chunk-size %s --concurrency %zu, %.3f GB/s",
                size_flag(best->chunk_size).c_str(), best->concurrency,
                best->median_gigabytes_per_second());
  if (!ceiling.empty()) out += ", " + ceiling + " of the ceiling";
  out += "\n" + result.best_environment() + '\n';
  return out;
}

std::string sweep_json(const SweepResult& result) {
  std::string out = "{\"url\":" + json_string(result.url) + ",\"host\":" + json_string(result.host) +
                    ",\"started\":" + json_string(utc_time(result.started, "%Y-%m-%dT%H:%M:%SZ"));
  out += format(",\"files\":%zu,\"tensors\":%llu,\"bytes\":%llu,\"model_tensors\":%llu,"
                "\"model_bytes\":%llu,\"io_mode\":",
                result.files, static_cast<unsigned long long>(result.tensors),
                static_cast<unsigned long long>(result.bytes),
                static_cast<unsigned long long>(result.model_tensors),
                static_cast<unsigned long long>(result.model_bytes));
  out += json_string(result.io_mode);
  out += format(",\"repeat\":%zu,\"seed\":%llu,\"interrupted\":%s,\"runs_planned\":%zu,"
                "\"runs_finished\":%zu,\"cells\":[",
                result.repeat, static_cast<unsigned long long>(result.seed),
                result.interrupted ? "true" : "false", result.runs_planned, result.runs_finished);
  for (std::size_t i = 0; i < result.cells.size(); ++i) {
    const SweepCell& cell = result.cells[i];
    if (i) out += ',';
    out += format("{\"chunk_size\":%llu,\"concurrency\":%zu,\"failed\":%s,\"error\":",
                  static_cast<unsigned long long>(cell.chunk_size), cell.concurrency,
                  cell.failed() ? "true" : "false");
    out += cell.failed() ? json_string(cell.error()) : "null";
    if (!cell.failed() && !cell.runs.empty()) {
      out += format(",\"gb_per_s\":%.6f,\"min_gb_per_s\":%.6f,\"max_gb_per_s\":%.6f,"
                    "\"first_tensor_ms\":%.3f,\"cpu_seconds_per_gb\":%.6f,\"requests\":%llu,"
                    "\"retries\":%llu,\"peak_memory\":%llu",
                    cell.median_gigabytes_per_second(), cell.min_gigabytes_per_second(),
                    cell.max_gigabytes_per_second(), cell.median_first_tensor_seconds() * 1e3,
                    cell.cpu_seconds_per_gigabyte(),
                    static_cast<unsigned long long>(cell.requests()),
                    static_cast<unsigned long long>(cell.retries()),
                    static_cast<unsigned long long>(cell.peak_memory()));
      const SweepCeiling* ceiling = result.ceiling_at(cell.concurrency);
      if (ceiling && !ceiling->failed() && ceiling->median_gigabytes_per_second() > 0) {
        out += format(",\"ceiling_ratio\":%.6f", cell.median_gigabytes_per_second() /
                                                     ceiling->median_gigabytes_per_second());
      }
    }
    out += ',';
    append_runs_json(out, cell.runs);
    out += '}';
  }
  out += "],\"ceilings\":[";
  for (std::size_t i = 0; i < result.ceilings.size(); ++i) {
    const SweepCeiling& ceiling = result.ceilings[i];
    if (i) out += ',';
    out += format("{\"concurrency\":%zu,\"range_size\":%llu,\"failed\":%s,\"error\":",
                  ceiling.concurrency, static_cast<unsigned long long>(ceiling.range_size),
                  ceiling.failed() ? "true" : "false");
    out += ceiling.failed() ? json_string(ceiling.error()) : "null";
    if (!ceiling.failed() && !ceiling.runs.empty()) {
      out += format(",\"gb_per_s\":%.6f,\"cpu_seconds_per_gb\":%.6f",
                    ceiling.median_gigabytes_per_second(), ceiling.cpu_seconds_per_gigabyte());
    }
    out += ',';
    append_runs_json(out, ceiling.runs);
    out += '}';
  }
  out += "],\"best\":";
  if (const SweepCell* best = result.best()) {
    out += format("{\"chunk_size\":%llu,\"concurrency\":%zu,\"gb_per_s\":%.6f,\"environment\":",
                  static_cast<unsigned long long>(best->chunk_size), best->concurrency,
                  best->median_gigabytes_per_second());
    out += json_string(result.best_environment()) + '}';
  } else {
    out += "null";
  }
  return out + "}\n";
}

std::string sweep_csv(const SweepResult& result) {
  std::string out =
      "kind,chunk_size,concurrency,repeat,gb_per_s,seconds,first_tensor_ms,cpu_seconds,bytes,"
      "requests,retries,connections,peak_memory,error\n";
  const auto append = [&](const char* kind, std::uint64_t chunk_size, std::size_t concurrency,
                          const SweepRun& run) {
    out += format("%s,%llu,%zu,%zu,%.6f,%.6f,%.3f,%.6f,%llu,%llu,%llu,%llu,%llu,", kind,
                  static_cast<unsigned long long>(chunk_size), concurrency, run.repeat,
                  run.gigabytes_per_second, run.seconds, run.first_tensor_seconds * 1e3,
                  run.cpu_seconds, static_cast<unsigned long long>(run.bytes),
                  static_cast<unsigned long long>(run.requests),
                  static_cast<unsigned long long>(run.retries),
                  static_cast<unsigned long long>(run.connections),
                  static_cast<unsigned long long>(run.peak_memory));
    out += csv_field(run.error) + '\n';
  };
  for (const auto& cell : result.cells) {
    for (const auto& run : cell.runs) append("stream", cell.chunk_size, cell.concurrency, run);
  }
  for (const auto& ceiling : result.ceilings) {
    for (const auto& run : ceiling.runs) {
      append("ceiling", ceiling.range_size, ceiling.concurrency, run);
    }
  }
  return out;
}

// `text` in lines of at most `width` characters, broken after a '/', ' ' or ',' where one is
// near the end of a line, else anywhere: an SVG text element does not wrap by itself.
std::vector<std::string> wrapped(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string_view rest = text;
  while (rest.size() > width) {
    std::size_t cut = rest.substr(0, width).find_last_of("/ ,");
    cut = cut == std::string_view::npos || cut < width / 2 ? width : cut + 1;
    lines.emplace_back(rest.substr(0, cut));
    rest.remove_prefix(cut);
  }
  lines.emplace_back(rest);
  return lines;
}

std::string sweep_svg(const SweepResult& result) {
  constexpr int cell_width = 112;
  constexpr int cell_height = 56;
  constexpr int left = 100;
  constexpr int legend_width = 90;
  // Generous widths per character of DejaVu Sans, so that a wrapped line always fits.
  constexpr double title_char_width = 10.5;
  constexpr double subtitle_char_width = 7.5;
  const int columns = static_cast<int>(result.concurrencies.size());
  const int rows = static_cast<int>(result.chunk_sizes.size());
  const int width = std::max(left + columns * cell_width + legend_width, 640);
  const auto fitting = [&](double char_width) {
    return static_cast<std::size_t>((width - 32) / char_width);
  };
  const auto title = wrapped("tensorstream bench " + result.url, fitting(title_char_width));
  std::vector<std::string> subtitles = wrapped(
      what_was_read(result) + ", " + result.io_mode + "; median GB/s of " +
          std::to_string(result.repeat) + (result.repeat == 1 ? " run" : " runs") + " per cell",
      fitting(subtitle_char_width));
  for (auto& line : wrapped(utc_time(result.started, "%Y-%m-%d %H:%M UTC") + " on " + result.host,
                            fitting(subtitle_char_width))) {
    subtitles.push_back(std::move(line));
  }
  if (result.interrupted) {
    for (auto& line : wrapped(interruption(result), fitting(subtitle_char_width))) {
      subtitles.push_back(std::move(line));
    }
  }
  const int subtitles_top = 26 + 20 * static_cast<int>(title.size());
  const int top = subtitles_top + 16 * static_cast<int>(subtitles.size()) + 18;
  const int grid_bottom = top + rows * cell_height;
  const int ceiling_rows = result.ceilings.empty() ? 0 : 1;
  const int footer_lines = 1 + ceiling_rows;
  const int height = grid_bottom + ceiling_rows * (cell_height + 8) + 24 + 16 * footer_lines;

  // The scale starts at zero, so that two cells a few per cent apart look a few per cent apart
  // rather than as far apart as the colours go.
  double high = 0;
  bool any = false;
  for (const auto& cell : result.cells) {
    if (cell.failed() || cell.runs.empty()) continue;
    high = std::max(high, cell.median_gigabytes_per_second());
    any = true;
  }
  const auto shade = [&](double rate) { return high > 0 ? rate / high : 1.0; };

  std::string out = format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
      width, height, width, height);
  for (std::size_t i = 0; i < title.size(); ++i) {
    out += format("<text class=\"title\" x=\"16\" y=\"%d\" font-size=\"16\" "
                  "font-weight=\"bold\">%s</text>\n",
                  26 + 20 * static_cast<int>(i), xml_escaped(title[i]).c_str());
  }
  for (std::size_t i = 0; i < subtitles.size(); ++i) {
    out += format("<text class=\"subtitle\" x=\"16\" y=\"%d\" font-size=\"12\" "
                  "fill=\"#444444\">%s</text>\n",
                  subtitles_top + 16 * static_cast<int>(i), xml_escaped(subtitles[i]).c_str());
  }
  out += format("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">concurrency"
                "</text>\n",
                left + columns * cell_width / 2, top - 22);
  out += format("<text x=\"18\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
                "transform=\"rotate(-90 18 %d)\">chunk size</text>\n",
                top + rows * cell_height / 2, top + rows * cell_height / 2);
  for (int j = 0; j < columns; ++j) {
    out += format("<text class=\"column\" x=\"%d\" y=\"%d\" font-size=\"12\" "
                  "text-anchor=\"middle\">%zu</text>\n",
                  left + j * cell_width + cell_width / 2, top - 6, result.concurrencies[j]);
  }

  const SweepCell* best = result.best();
  std::string best_outline;
  for (int i = 0; i < rows; ++i) {
    const int y = top + i * cell_height;
    out += format("<text class=\"row\" x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">"
                  "%s</text>\n",
                  left - 8, y + cell_height / 2 + 4,
                  format_byte_size(result.chunk_sizes[i]).c_str());
    for (int j = 0; j < columns; ++j) {
      const SweepCell& cell = result.cells[i * columns + j];
      const int x = left + j * cell_width;
      const int middle = x + cell_width / 2;
      const std::string attributes =
          format("data-chunk-size=\"%llu\" data-concurrency=\"%zu\"",
                 static_cast<unsigned long long>(cell.chunk_size), cell.concurrency);
      if (cell.failed() || cell.runs.empty()) {
        out += format("<rect class=\"cell %s\" %s x=\"%d\" y=\"%d\" width=\"%d\" "
                      "height=\"%d\" fill=\"#d0d0d0\" stroke=\"#ffffff\"><title>%s</title>"
                      "</rect>\n",
                      cell.failed() ? "failed" : "not-run", attributes.c_str(), x, y, cell_width,
                      cell_height, xml_escaped(cell.error()).c_str());
        out += format("<text class=\"value\" %s x=\"%d\" y=\"%d\" font-size=\"13\" "
                      "text-anchor=\"middle\" fill=\"#000000\">%s</text>\n",
                      attributes.c_str(), middle, y + cell_height / 2 + 5,
                      cell.failed() ? "failed" : "not run");
        continue;
      }
      const double t = shade(cell.median_gigabytes_per_second());
      const char* ink = t < 0.6 ? "#ffffff" : "#000000";
      out += format("<rect class=\"cell\" %s x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"%s\" stroke=\"#ffffff\"/>\n",
                    attributes.c_str(), x, y, cell_width, cell_height, heat_colour(t).c_str());
      const std::string ratio = percent_of_ceiling(result, cell);
      out += format("<text class=\"value\" %s x=\"%d\" y=\"%d\" font-size=\"15\" "
                    "font-weight=\"bold\" text-anchor=\"middle\" fill=\"%s\">%.3f</text>\n",
                    attributes.c_str(), middle, y + (ratio.empty() ? 33 : 27), ink,
                    cell.median_gigabytes_per_second());
      if (!ratio.empty()) {
        out += format("<text class=\"ratio\" %s x=\"%d\" y=\"%d\" font-size=\"11\" "
                      "text-anchor=\"middle\" fill=\"%s\">%s of ceiling</text>\n",
                      attributes.c_str(), middle, y + 44, ink, ratio.c_str());
      }
      if (&cell == best) {
        best_outline = format("<rect class=\"best\" %s x=\"%d\" y=\"%d\" width=\"%d\" "
                              "height=\"%d\" fill=\"none\" stroke=\"#e4002b\" "
                              "stroke-width=\"4\"/>\n",
                              attributes.c_str(), x + 2, y + 2, cell_width - 4, cell_height - 4);
      }
    }
  }
  out += best_outline;

  if (ceiling_rows) {
    const int y = grid_bottom + 8;
    out += format("<text class=\"row\" x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">"
                  "ceiling</text>\n",
                  left - 8, y + cell_height / 2 + 4);
    for (int j = 0; j < columns; ++j) {
      const SweepCeiling* ceiling = result.ceiling_at(result.concurrencies[j]);
      const int x = left + j * cell_width;
      out += format("<rect class=\"ceiling\" data-concurrency=\"%zu\" x=\"%d\" y=\"%d\" "
                    "width=\"%d\" height=\"%d\" fill=\"#f4f4f4\" stroke=\"#ffffff\"/>\n",
                    result.concurrencies[j], x, y, cell_width, cell_height);
      const std::string value = ceiling ? grid_value(*ceiling, "not run") : "failed";
      out += format("<text class=\"ceiling-value\" data-concurrency=\"%zu\" x=\"%d\" y=\"%d\" "
                    "font-size=\"14\" text-anchor=\"middle\" fill=\"#000000\">%s</text>\n",
                    result.concurrencies[j], x + cell_width / 2, y + cell_height / 2 + 5,
                    value.c_str());
    }
  }

  if (any) {
    const int x = left + columns * cell_width + 24;
    const int bar_height = rows * cell_height;
    out += "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    for (int stop = 0; stop <= 4; ++stop) {
      out += format("<stop offset=\"%d%%\" stop-color=\"%s\"/>", stop * 25,
                    heat_colour(stop / 4.0).c_str());
    }
    out += "</linearGradient></defs>\n";
    out += format("<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" "
                  "fill=\"url(#scale)\"/>\n",
                  x, top, bar_height);
    out += format("<text class=\"legend-label\" x=\"%d\" y=\"%d\" font-size=\"11\">%.3f"
                  "</text>\n",
                  x + 18, top + 10, high);
    out += format("<text class=\"legend-label\" x=\"%d\" y=\"%d\" font-size=\"11\">0</text>\n",
                  x + 18, top + bar_height);
    out += format("<text class=\"legend-label\" x=\"%d\" y=\"%d\" font-size=\"11\">GB/s</text>\n",
                  x - 4, top - 6);
  }
  if (ceiling_rows) {
    out += format("<text class=\"note\" x=\"16\" y=\"%d\" font-size=\"11\" fill=\"#444444\">"
                  "%% of ceiling: the cell's median over that of plain parallel range reads at "
                  "its concurrency</text>\n",
                  height - 30);
  }
  out += format("<text x=\"16\" y=\"%d\" font-size=\"11\" fill=\"#444444\">best, outlined: %s"
                "</text>\n",
                height - 14,
                xml_escaped(!result.best_environment().empty() ? result.best_environment()
                            : result.interrupted ? "none: no cell finished a run"
                                                 : "none: every cell failed")
                    .c_str());
  return out + "</svg>\n";
}

}  // namespace tensorstream::bench

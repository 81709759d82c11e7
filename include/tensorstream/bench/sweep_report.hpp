#pragma once
/// @file
/// A sweep's results as a table, JSON, CSV and an SVG heatmap.

#include <string>

#include "tensorstream/bench/sweep.hpp"
#include "tensorstream/export.hpp"

namespace tensorstream::bench {

/// For a terminal: the median GB/s of every cell as a grid (the best marked `*`), one line per
/// cell with its spread, ceiling ratio, first tensor, CPU, requests, retries and memory, and the
/// settings to use.
TENSORSTREAM_API
std::string sweep_table(const SweepResult& result);

/// One JSON object holding everything the table shows, every run, and the best cell.
TENSORSTREAM_API
std::string sweep_json(const SweepResult& result);

/// One row per run, stream runs (`kind` "stream") and ceiling runs ("ceiling"), after a header row.
TENSORSTREAM_API
std::string sweep_csv(const SweepResult& result);

/// A standalone SVG heatmap: chunk sizes down, concurrencies across, each cell coloured by its
/// median GB/s and labelled with it (and its share of the ceiling when measured), failed cells
/// grey, the best outlined; titled with the URL, the bytes read, the date and the host.
TENSORSTREAM_API
std::string sweep_svg(const SweepResult& result);

}  // namespace tensorstream::bench

#pragma once
/// @file
/// Finding the chunk size and concurrency that stream a checkpoint fastest from where it is.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::bench {

/// The settings a sweep tries: every chunk size with every concurrency.
struct SweepGrid {
  std::vector<std::uint64_t> chunk_sizes{1ull << 20, 4ull << 20, 16ull << 20, 64ull << 20};
  std::vector<std::size_t> concurrencies{4, 8, 16, 32, 64};
};

/// One timed read of the sweep's bytes: a stream with one cell's settings, or a ceiling read.
struct SweepRun {
  std::size_t repeat = 0;            ///< Which repeat, from 0.
  double seconds = 0;                ///< Wall time, from opening the store to the last byte.
  double gigabytes_per_second = 0;   ///< Bytes over seconds, in GB/s (10^9 bytes).
  /// Until the first tensor was ready (a ceiling: until its first range read completed).
  double first_tensor_seconds = 0;
  double cpu_seconds = 0;            ///< User and system CPU time of the whole process meanwhile.
  std::uint64_t bytes = 0;           ///< Bytes landed.
  std::uint64_t requests = 0;        ///< Requests sent, headers and listings included.
  std::uint64_t retries = 0;         ///< Requests repeated after transient failures.
  std::uint64_t connections = 0;     ///< Connections opened.
  std::uint64_t peak_memory = 0;     ///< Most tensor bytes held at once (a ceiling: its buffers).
  std::string error;                 ///< Why the run failed; empty when it did not.
};

/// What one chunk size × concurrency did over the repeats.
struct TENSORSTREAM_API SweepCell {
  std::uint64_t chunk_size = 0;
  std::size_t concurrency = 0;
  /// Its runs in repeat order. A cell whose run fails is not run again: a failed cell's last run
  /// is the failed one.
  std::vector<SweepRun> runs;

  /// Whether a run failed.
  bool failed() const;
  /// The failed run's error, or "".
  const std::string& error() const;
  /// Median GB/s over the runs (0 for a failed cell or none run).
  double median_gigabytes_per_second() const;
  /// Least and most GB/s of the runs: the spread the median hides.
  double min_gigabytes_per_second() const;
  double max_gigabytes_per_second() const;
  /// Median time to the first tensor.
  double median_first_tensor_seconds() const;
  /// CPU seconds per GB over all runs together.
  double cpu_seconds_per_gigabyte() const;
  /// Requests of the median run, retries of all runs together, most memory held by any run.
  std::uint64_t requests() const;
  std::uint64_t retries() const;
  std::uint64_t peak_memory() const;
};

/// What plain parallel range reads of the same bytes did at one concurrency: `concurrency` reads
/// in flight, each into a buffer of its own that the next read overwrites; no tensors, no memory
/// accounting.
/// What the network and the server give, which no setting of the stream can beat.
struct TENSORSTREAM_API SweepCeiling {
  std::size_t concurrency = 0;
  /// Bytes per range read: the grid's largest chunk size, made smaller (in whole MiB, at least
  /// one) where that would leave fewer ranges than reads in flight, or buffers of more than the
  /// stream's memory_limit together.
  std::uint64_t range_size = 0;
  std::vector<SweepRun> runs;  ///< As SweepCell::runs.

  bool failed() const;
  const std::string& error() const;
  double median_gigabytes_per_second() const;
  double cpu_seconds_per_gigabyte() const;
};

/// One run done, for progress displays.
struct SweepStep {
  std::size_t index = 0;         ///< Runs done so far, this one included.
  std::size_t count = 0;         ///< Runs the sweep plans (failed cells skip their later ones).
  std::uint64_t chunk_size = 0;  ///< The cell's chunk size; 0 for a ceiling run.
  std::size_t concurrency = 0;
  const SweepRun& run;
};

/// What a sweep is about to do, known once the checkpoint's headers are read: for an estimate
/// before the first run.
struct SweepPlan {
  std::size_t cells = 0;       ///< Chunk sizes × concurrencies.
  std::size_t ceilings = 0;    ///< Ceilings measured, one per concurrency (or none).
  std::size_t runs = 0;        ///< (cells + ceilings) × repeat.
  std::uint64_t tensors = 0;   ///< Tensors every run reads.
  std::uint64_t bytes = 0;     ///< Their bytes: what every run reads.
};

/// How to sweep.
struct SweepOptions {
  /// Runs per cell (and per ceiling). Each repeat runs every cell once, in an order shuffled anew,
  /// so that a drifting network favours no corner of the grid.
  std::size_t repeat = 3;
  /// Read only the first tensors, in stream order, whose sizes add up to at most this many bytes
  /// (at least one tensor), so a sweep over a large checkpoint stays short. Unset: all of them.
  std::optional<std::uint64_t> max_bytes;
  /// Also measure the ceiling at every concurrency of the grid (SweepCeiling).
  bool ceiling = false;
  /// Seed of the shuffles; unset, a random one (SweepResult::seed says which).
  std::optional<std::uint64_t> seed;
  /// Options of every stream: memory_limit, io_threads, rank, tensor_parallel_size, store and
  /// select apply; chunk_size and max_concurrency are each cell's.
  StreamerOptions stream;
  /// Called once before the first run, on the calling thread.
  std::function<void(const SweepPlan&)> on_plan;
  /// Called after each run, on the calling thread.
  std::function<void(const SweepStep&)> on_run;
  /// Asked before each run, on the calling thread: when it returns true, the sweep stops there
  /// and returns the runs it finished, with SweepResult::interrupted set (e.g. on Ctrl-C).
  std::function<bool()> stop_requested;
};

/// A sweep's results, as data.
struct TENSORSTREAM_API SweepResult {
  std::string url;                  ///< What was read, as given.
  std::string host;                 ///< This machine's host name.
  std::chrono::system_clock::time_point started;
  std::size_t files = 0;            ///< Objects read.
  std::uint64_t tensors = 0;        ///< Tensors every run reads.
  std::uint64_t bytes = 0;          ///< Their bytes.
  std::uint64_t model_tensors = 0;  ///< Tensors the stream would load without max_bytes.
  std::uint64_t model_bytes = 0;    ///< Their bytes.
  std::string io_mode;              ///< How the store reads ("http", "https", "io_uring", ...).
  std::size_t repeat = 0;
  std::uint64_t seed = 0;
  std::vector<std::uint64_t> chunk_sizes;  ///< The grid, in the order given.
  std::vector<std::size_t> concurrencies;
  /// One per chunk size and concurrency: cells[i * concurrencies.size() + j] has chunk_sizes[i]
  /// and concurrencies[j].
  std::vector<SweepCell> cells;
  /// One per concurrency, in the grid's order, when SweepOptions::ceiling; else empty.
  std::vector<SweepCeiling> ceilings;
  /// Whether SweepOptions::stop_requested ended the sweep early: then cells hold fewer runs
  /// than `repeat`, and some none.
  bool interrupted = false;
  std::size_t runs_planned = 0;   ///< Runs the sweep meant to make, less those a failure skipped.
  std::size_t runs_finished = 0;  ///< Runs it made.

  /// The cell with the highest median GB/s among those that ran and did not fail; nullptr when
  /// there is none.
  const SweepCell* best() const;
  /// The ceiling at `concurrency`; nullptr when none was measured.
  const SweepCeiling* ceiling_at(std::size_t concurrency) const;
  /// The environment that makes streams use the best cell's settings:
  /// "TENSORSTREAM_CHUNK_SIZE=1048576 TENSORSTREAM_MAX_CONCURRENCY=16"; "" when every cell failed.
  std::string best_environment() const;
};

/// Streams the checkpoint at `url` (anything RawStreamer takes) once per cell of `grid` and
/// repeat, in one process, with a new store and new connections for every run, and returns what
/// each cell did. The tensors to read are found first: a URL that cannot be read, or a grid or
/// options that make no sweep, throw before any cell runs. A run that fails is recorded in its
/// cell, and the sweep goes on. Blocks the calling thread.
/// @throws InvalidArgument for an empty list, a zero chunk size or concurrency, a zero repeat,
///   a zero max_bytes or a bad URL; what RawStreamer throws for a checkpoint it cannot read.
TENSORSTREAM_API
SweepResult sweep(const std::string& url, const SweepGrid& grid, const SweepOptions& options = {});

}  // namespace tensorstream::bench

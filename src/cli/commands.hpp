#pragma once

#include <CLI/App.hpp>

namespace tensorstream::cli {

/// `tensorstream stream URL ...`: streams every tensor and drops it, reporting progress.
void register_stream_command(CLI::App& app);

/// `tensorstream inspect URL ...`: prints the headers without loading tensors.
void register_inspect_command(CLI::App& app);

/// `tensorstream bench URL ...`: streams a checkpoint with every chunk size and concurrency of a
/// grid and reports which is fastest.
void register_bench_command(CLI::App& app);

/// `tensorstream ls URL ...`: lists objects with their sizes.
void register_ls_command(CLI::App& app);

/// `tensorstream gen-model DIR ...`: writes a synthetic Llama-shaped checkpoint.
void register_gen_model_command(CLI::App& app);

/// `tensorstream prefetch [URL [DIR]] ...`: copies a model's non-weight artifacts to a directory.
void register_prefetch_command(CLI::App& app);

/// `tensorstream cp SRC DST [-r] ...`: copies an object, or the objects under a prefix, from any
/// source to a directory or a store that can write.
void register_cp_command(CLI::App& app);

/// `tensorstream shard SRC DST --tp N ...`: writes a checkpoint's tensor-parallel rank files.
void register_shard_command(CLI::App& app);

/// `tensorstream partition SRC DST --tp 1,2,4,8 ...`: writes a checkpoint cut for several
/// tensor-parallel sizes, one TRAW object per rank's tensor.
void register_partition_command(CLI::App& app);

/// `tensorstream cleanup URL ...`: removes temporaries and uploads that killed writers left.
void register_cleanup_command(CLI::App& app);

/// `tensorstream cache ls|du|verify|prune|rm`: what a cache directory holds, and its upkeep.
void register_cache_command(CLI::App& app);

/// `tensorstream attach SOCKET --rank R ...`: maps a rank a store server serves and lists its
/// tensors.
void register_attach_command(CLI::App& app);

/// `tensorstream status SOCKET ...`: what a store server serves, rank by rank.
void register_status_command(CLI::App& app);

/// `tensorstream reload SOCKET [SRC]`: a store server loads its checkpoint again (or SRC) and
/// serves the new generation once loaded.
void register_reload_command(CLI::App& app);

/// `tensorstream serve SRC --tp N --socket PATH ...`: loads ranks into shared memory and serves
/// them to workers until SIGTERM or SIGINT; SIGHUP reloads.
void register_serve_command(CLI::App& app);

}  // namespace tensorstream::cli

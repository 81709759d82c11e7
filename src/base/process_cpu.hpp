#pragma once
// The CPU time this process has used, for the CPU-per-GB figures of `stream` and `bench`.

namespace tensorstream {

/// User and system CPU seconds of the whole process so far (getrusage RUSAGE_SELF).
double process_cpu_seconds();

}  // namespace tensorstream

# Sourced by the side-by-side benchmark scripts. `seconds COMMAND...` runs COMMAND (its output
# dropped) and prints "WALL/CPU": its wall-clock seconds, and the CPU seconds the server process
# whose pid is in $server spent meanwhile, which tells a run bound by the server from one bound
# by its client.

server_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }

seconds() {
  local start end ticks
  ticks="$(server_ticks)"
  start="$(date +%s.%N)"
  "$@" >/dev/null
  end="$(date +%s.%N)"
  python3 -c "print(f'{$end - $start:.3f}/{($(server_ticks) - $ticks) / $(getconf CLK_TCK):.1f}')"
}

#pragma once
// Running a coroutine on another strand with the caller's cancellation delivered there.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <utility>

namespace tensorstream::async {

/// Runs `work` on `strand`, resumes the caller on its own executor with the result (or the
/// exception) of `work`, and relays the caller's cancellation to `work`.
///
/// Asio cancellation slots are not thread-safe: a signal must be emitted where the operation it
/// cancels runs. The caller's signal is emitted on the caller's executor, so each emission is
/// posted to `strand` and emitted there; emissions that arrive after `work` finished are
/// dropped. The relay is shared with the posted handlers, so it outlives all of them (Asio 1.81's
/// own co_spawn relay does not, a bug fixed in 1.83). Every place the library moves work onto
/// another strand and awaits it goes through here.
template <class T, class Executor>
boost::asio::awaitable<T> run_on_strand(boost::asio::strand<Executor> strand,
                                        boost::asio::awaitable<T> work) {
  namespace asio = boost::asio;
  struct Relay {
    asio::cancellation_signal signal;
    bool finished = false;  // Touched only on the strand.
  };
  auto relay = std::make_shared<Relay>();
  const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
  auto caller = state.slot();
  if (caller.is_connected()) {
    caller.assign([relay, strand](asio::cancellation_type type) {
      asio::post(strand, [relay, type] {
        if (!relay->finished) relay->signal.emit(type);
      });
    });
  }
  // Clears the caller's slot on the caller's executor, where it is emitted, also on exceptions.
  struct Detach {
    asio::cancellation_slot slot;
    ~Detach() {
      if (slot.is_connected()) slot.clear();
    }
  } detach{caller};

  auto guarded = [](std::shared_ptr<Relay> owner, asio::awaitable<T> body) -> asio::awaitable<T> {
    struct Finish {
      Relay& relay;
      ~Finish() { relay.finished = true; }
    } finish{*owner};
    co_return co_await std::move(body);
  };
  auto spawned = guarded(relay, std::move(work));
  auto token = asio::bind_cancellation_slot(relay->signal.slot(), asio::use_awaitable);
  co_return co_await asio::co_spawn(strand, std::move(spawned), std::move(token));
}

}  // namespace tensorstream::async

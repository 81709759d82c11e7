#include "storage/gcs/authorized_user_provider.hpp"

#include "storage/gcs/token_endpoint.hpp"

namespace tensorstream::gcs {

AuthorizedUserProvider::AuthorizedUserProvider(AuthorizedUser user,
                                               std::chrono::milliseconds timeout)
    : user_(std::move(user)), timeout_(timeout) {}

std::string AuthorizedUserProvider::name() const { return "authorized user"; }

boost::asio::awaitable<AccessToken> AuthorizedUserProvider::get() {
  std::string form = form_encode({{"grant_type", "refresh_token"},
                                  {"client_id", user_.client_id},
                                  {"client_secret", user_.client_secret},
                                  {"refresh_token", user_.refresh_token}});
  co_return co_await post_token_request(user_.token_uri, std::move(form), timeout_, name());
}

}  // namespace tensorstream::gcs

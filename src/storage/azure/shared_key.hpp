#pragma once
// Shared Key authorization of Blob Storage requests (version 2015-02-21 and later): an
// HMAC-SHA256, under the account key, of the request's method, standard headers, x-ms-* headers
// and resource.

#include <string>
#include <string_view>

#include "storage/http/service_adapter.hpp"

namespace tensorstream::azure {

/// The string Shared Key signs for `head` of `account`. `head.headers` holds every header the
/// request sends (x-ms-date and x-ms-version among them), names in any case; `head.target` is the
/// percent-encoded path and query as sent.
std::string string_to_sign(const RequestHead& head, std::string_view account);

/// "SharedKey ACCOUNT:SIGNATURE" for `head`, signed with the raw (base64-decoded) `key`.
std::string shared_key_authorization(const RequestHead& head, std::string_view account,
                                     std::string_view key);

}  // namespace tensorstream::azure

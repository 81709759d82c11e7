#include "support/form_fields.hpp"

#include <charconv>

namespace tensorstream::testing {

std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+' && plus_is_space) {
      decoded += ' ';
    } else if (text[i] == '%' && i + 2 < text.size()) {
      unsigned value = 0;
      const auto digits = text.substr(i + 1, 2);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + 2, value, 16);
      if (ec == std::errc{} && end == digits.data() + 2) {
        decoded += static_cast<char>(value);
        i += 2;
      } else {
        decoded += '%';
      }
    } else {
      decoded += text[i];
    }
  }
  return decoded;
}

std::map<std::string, std::string> parse_pairs(std::string_view text, bool plus_is_space) {
  std::map<std::string, std::string> pairs;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const auto pair = text.substr(0, amp);
    const auto equals = pair.find('=');
    pairs[percent_decode(pair.substr(0, equals), plus_is_space)] =
        equals == std::string_view::npos ? "" : percent_decode(pair.substr(equals + 1), plus_is_space);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
  }
  return pairs;
}

std::pair<std::string_view, std::string_view> split_target(std::string_view target) {
  const auto question = target.find('?');
  if (question == std::string_view::npos) return {target, {}};
  return {target.substr(0, question), target.substr(question + 1)};
}

}  // namespace tensorstream::testing

#include "storage/s3/ini_file.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

}  // namespace

IniSections parse_ini(std::string_view text, const std::string& path) {
  IniSections sections;
  IniSection* section = nullptr;
  std::string* value = nullptr;
  int number = 0;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fail = [&](const std::string& what) {
      throw InvalidArgument(path + ":" + std::to_string(number) + ": " + what);
    };

    const std::string_view content = trim(line);
    if (content.empty() || content.front() == '#' || content.front() == ';') continue;
    if (line.front() == ' ' || line.front() == '\t') {
      if (value == nullptr)
        fail("indented line \"" + std::string(content) + "\" continues no setting");
      *value += '\n';
      *value += content;
      continue;
    }
    if (content.front() == '[') {
      if (content.back() != ']') fail("section header \"" + std::string(content) + "\" lacks ']'");
      const std::string name(trim(content.substr(1, content.size() - 2)));
      if (name.empty()) fail("empty section name");
      section = &sections[name];
      value = nullptr;
      continue;
    }
    const auto equals = content.find('=');
    if (equals == std::string_view::npos) {
      fail("expected \"key = value\", got \"" + std::string(content) + "\"");
    }
    const std::string key(trim(content.substr(0, equals)));
    if (key.empty()) fail("setting without a key");
    if (section == nullptr) fail("setting \"" + key + "\" outside of any [section]");
    value = &(*section)[key];
    *value = trim(content.substr(equals + 1));
  }
  return sections;
}

}  // namespace tensorstream::s3

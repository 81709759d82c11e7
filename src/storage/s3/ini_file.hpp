#pragma once
// The INI dialect of the AWS shared credentials and config files.

#include <map>
#include <string>
#include <string_view>

namespace tensorstream::s3 {

/// Settings of one section, by key.
using IniSection = std::map<std::string, std::string>;

/// Sections by name, as written between the brackets (e.g. "profile dev").
using IniSections = std::map<std::string, IniSection>;

/// Parses the AWS dialect of INI: `[section]` headers, `key = value` lines, full-line comments
/// starting with '#' or ';', blank lines, and indented lines continuing the previous value
/// (joined with '\n'), as in nested `s3 =` settings. A section given twice is merged; a key
/// given twice keeps its last value. Anything else is an error: throws InvalidArgument naming
/// `path` and the line number.
IniSections parse_ini(std::string_view text, const std::string& path);

}  // namespace tensorstream::s3

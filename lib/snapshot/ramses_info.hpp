// The text files of a RAMSES output: info_NNNNN.txt ("key = value" lines: ncpu, boxlen, aexp, units, ...)
// and header_NNNNN.txt (particles per family), and the small text helpers every RAMSES text file needs.
// Internal to lib/snapshot's RAMSES reader (snapshot/ramses.hpp is the public face).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace phew::snapshot::ramses {

std::string trim(const std::string& s);

// The lines of a text file. Throws Error(io) when it cannot be opened.
std::vector<std::string> read_lines(const std::string& path);

// Fortran may write exponents with D; the whole text must be the number.
std::optional<double> parse_number(std::string text);

// "key = value" lines of an info file.
std::map<std::string, std::string> key_values(const std::vector<std::string>& lines);

// An info file starts with "ncpu = N" and has ndim and boxlen: enough to tell it from anything else.
bool looks_like_info(const std::filesystem::path& path);

// The info_NNNNN.txt files of a folder (recognised by their content), sorted.
std::vector<std::filesystem::path> info_files_in(const std::filesystem::path& folder);

// Particles per phew type (kRamsesNumTypes entries) from header_NNNNN.txt's family table. Throws
// Error(input) naming the file for a table phew cannot read.
std::vector<std::uint64_t> parse_header_totals(const std::string& path);

}  // namespace phew::snapshot::ramses

// Checks of what snapshot headers say, shared by the readers: the pieces of a
// multi-file snapshot belong together, and header values are ones a simulation can have written.
// Each failure is one Error(input) naming the file and the header field.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace phew::snapshot {

// What every piece of a multi-file snapshot repeats in its header, and must repeat alike. Absent
// fields stay empty (a format without them, or a file that leaves them out).
struct PieceHeader {
  std::string path;
  std::optional<double> time;
  std::vector<double> box_size;
  std::optional<std::int64_t> num_files;
  std::vector<double> mass_table;
  std::vector<std::uint64_t> total;  // NumPart_Total, with its high word
  std::optional<double> omega0, omega_lambda, hubble_param;
};

// Throws Error(input) when `piece` disagrees with `first` on any field:
// "snap.1.hdf5: Header/Time is 0.5, but snap.0.hdf5 has 1 (not a piece of the same snapshot)". Floating
// values agree within a relative 1e-9 (a text round trip of a converter).
void check_same_snapshot(const PieceHeader& first, const PieceHeader& piece);

// Throws Error(input) when two of `paths` are the same file, also through a link or another path name:
// a piece given twice would be read twice and another never.
void check_distinct_files(const std::vector<std::string>& paths);

// Pieces that hold the same particles (a piece copied under another piece's name): the first particle of
// each type in each piece, by ID and position, must be new (IDs alone may restart in every file of
// hand-made snapshots). Throws Error(input) naming both pieces.
class PieceSignatures {
 public:
  void add(const std::string& path, int type, std::uint64_t first_id, const std::array<double, 3>& first_position);

 private:
  std::map<std::tuple<int, std::uint64_t, std::array<double, 3>>, std::string> seen_;
};

// Header cosmology that cannot be meant: a value that is not finite or is negative (Omega0, HubbleParam),
// or Omega0 > 0 with HubbleParam 0 (the cosmology would be dropped without a word). Absent values pass.
void check_header_cosmology(const std::string& path, std::optional<double> omega0, std::optional<double> omega_lambda,
                            std::optional<double> hubble_param);

// NumFilesPerSnapshot (or NumFiles) must be a whole number >= 1.
void check_num_files(const std::string& path, const char* field, double num_files);

}  // namespace phew::snapshot

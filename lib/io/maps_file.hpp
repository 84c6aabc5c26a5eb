// maps.h5 (dtfe-surface): a surface-density map per field centre and a row per field (docs/formats.md).
#pragma once

#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/maps.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/maps.hpp's).
const Table<model::MapRow>& map_table();
const Table<model::MapTiming>& map_timing_table();

// Writes /maps (sigma, the rows and the attributes) and /timing. Collective.
void write_maps(File& file, const model::Maps& maps, const mpi::Comm& comm);

// What a reader needs before the tables: the attributes, the number of fields and their resolution.
struct MapsHeader {
  model::MapsMeta meta;
  std::uint64_t n_fields = 0;
  std::int64_t resolution = 0;
};
MapsHeader read_maps_header(const File& file);  // throws Error(input) naming the file and object
std::vector<model::MapRow> read_map_rows(const File& file);
std::vector<model::MapTiming> read_map_timing(const File& file);
// Maps [first, first + count), [count][resolution][resolution], as float64 whatever is stored.
std::vector<double> read_map_sigma(const File& file, std::uint64_t first, std::uint64_t count);

// The PNG quicklook of field `index` (from 0) beside OUTPUT: OUTPUT without .h5, then .0001.png, ...
std::string quicklook_path(const std::string& output, std::size_t index);
// The quicklooks of this rank's fields (io/quicklook.hpp) as (path beside OUTPUT, PNG bytes). Collective
// (the numbering of the fields).
std::vector<std::pair<std::string, std::string>> quicklooks(const std::string& output, const model::Maps& maps,
                                                            const mpi::Comm& comm);

}  // namespace phew::io

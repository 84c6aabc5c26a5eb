#include <phew/io/amr_grid_file.hpp>

#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <type_traits>

namespace phew::io {
namespace {

constexpr const char* kLeaves = "/grid/leaves";
// Leaves a task of lib/io's threads checks or keeps at a time.
constexpr std::size_t kRowsPerTask = std::size_t{1} << 15;

}  // namespace

bool is_adaptive_grid(const File& file) { return file.has(kLeaves); }

namespace {

template <typename Real>
void write_leaves(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                  std::span<const Real> density, const NextKeys& next_keys, Precision precision, bool compress,
                  const mpi::Comm& comm) {
  file.create_group("/grid");
  write_grid_attributes(file, meta, "/grid");
  file.create_group(kLeaves);
  const std::vector<std::uint64_t> counts = comm.all_gather(static_cast<std::uint64_t>(density.size()));
  std::uint64_t begin = 0, total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) begin += counts[static_cast<std::size_t>(r)];
    total += counts[static_cast<std::size_t>(r)];
  }
  const Storage storage = compress ? Storage{kLeafChunk, kGridDeflate} : Storage{};
  // Parallel HDF5 writes filtered datasets collectively only without a type conversion on the way: each
  // column goes out in its stored type.
  file.create_rows<std::uint64_t>("/grid/leaves/key", total, storage);
  file.create_rows<std::int8_t>("/grid/leaves/level", total, storage);
  const bool single = precision == Precision::f32;
  if (single)
    file.create_rows<float>("/grid/leaves/density", total, storage);
  else
    file.create_rows<double>("/grid/leaves/density", total, storage);
  // This rank's rows in pieces cut where the whole table's rows reach a multiple of kLeafPiece (whole
  // chunks, so that no chunk is written twice by one rank); every rank writes as many pieces as the rank
  // with the most, the last ones empty.
  const std::uint64_t end = begin + density.size();
  const auto pieces_of = [&](std::uint64_t b, std::uint64_t e) -> std::uint64_t {
    return b == e ? 0 : (e - 1) / kLeafPiece - b / kLeafPiece + 1;
  };
  std::uint64_t most = 0, at = 0;
  for (int r = 0; r < comm.size(); ++r) {
    most = std::max(most, pieces_of(at, at + counts[static_cast<std::size_t>(r)]));
    at += counts[static_cast<std::size_t>(r)];
  }
  const auto piece_end_from = [&](std::uint64_t row) {
    return row < end ? std::min(end, (row / kLeafPiece + 1) * kLeafPiece) : end;
  };
  const auto make_keys = [&](std::uint64_t row, std::vector<std::uint64_t>& out) {
    out.resize(piece_end_from(row) - row);
    if (!out.empty()) next_keys(out);
  };
  // With io threads, the next piece's keys are made on a thread of their own while this piece is
  // written: a run's keys come one after another from its levels (LeafKeyCursor), and on the 2.1 M box at
  // four levels took about as long as writing them. The keys are the same, made in the same order.
  const bool ahead = io_threads() > 1;
  std::vector<std::uint64_t> key, next;
  std::vector<std::int8_t> level;
  std::vector<std::conditional_t<std::is_same_v<Real, float>, double, float>> converted;
  std::future<void> making;  // after `next`: waited for before it goes
  if (ahead) make_keys(begin, next);
  for (std::uint64_t piece = 0, row = begin; piece < most; ++piece) {
    const std::uint64_t piece_end = piece_end_from(row);
    const std::size_t n = piece_end - row;
    if (ahead) {
      if (making.valid()) making.get();
      key.swap(next);
      if (piece + 1 < most) making = std::async(std::launch::async, [&, piece_end] { make_keys(piece_end, next); });
    } else {
      make_keys(row, key);
    }
    level.resize(n);
    for (std::size_t i = 0; i < n; ++i) level[i] = static_cast<std::int8_t>(key[i] & 0xF);
    const std::span<const Real> values = density.subspan(row - begin, n);
    file.write_rows_piece<std::uint64_t>("/grid/leaves/key", row, key);
    file.write_rows_piece<std::int8_t>("/grid/leaves/level", row, level);
    if (single == std::is_same_v<Real, float>) {
      file.write_rows_piece<Real>("/grid/leaves/density", row, values);
    } else {  // float to double exact; double to float rounded once, as the grid stores it
      converted.assign(values.begin(), values.end());
      file.write_rows_piece<typename decltype(converted)::value_type>("/grid/leaves/density", row, converted);
    }
    row = piece_end;
  }
  file.write_attribute("/grid/leaves/density", "units", meta.density_units);
  file.write_attribute("/grid/leaves/key", "description",
                       "Morton order of the cell's lower corner on the finest lattice (coarse shape * 2^levels), "
                       "shifted left by 4, or-ed with the level (docs/formats.md)");
  write_refinement(file, kLeaves, refinement);
}

// The keys of a listed run, batch after batch.
NextKeys listed(std::span<const std::uint64_t> keys, std::size_t density_rows) {
  if (keys.size() != density_rows)
    throw core::Error::internal("write_amr_grid: {} keys, {} densities", keys.size(), density_rows);
  return [keys, at = std::size_t{0}](std::span<std::uint64_t> out) mutable {
    std::copy_n(keys.begin() + static_cast<std::ptrdiff_t>(at), out.size(), out.begin());
    at += out.size();
  };
}

}  // namespace

void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const double> density, const NextKeys& next_keys, Precision precision, bool compress,
                    const mpi::Comm& comm) {
  write_leaves(file, meta, refinement, density, next_keys, precision, compress, comm);
}

void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const float> density, const NextKeys& next_keys, Precision precision, bool compress,
                    const mpi::Comm& comm) {
  write_leaves(file, meta, refinement, density, next_keys, precision, compress, comm);
}

void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const std::uint64_t> keys, std::span<const double> density, Precision precision,
                    bool compress, const mpi::Comm& comm) {
  write_leaves(file, meta, refinement, density, listed(keys, density.size()), precision, compress, comm);
}

void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const std::uint64_t> keys, std::span<const float> density, Precision precision,
                    bool compress, const mpi::Comm& comm) {
  write_leaves(file, meta, refinement, density, listed(keys, density.size()), precision, compress, comm);
}

bool amr_density_is_float32(const File& file) { return file.dataset_info("/grid/leaves/density").is_float32(); }

void write_refinement(File& file, const std::string& group, const model::AmrRefinement& refinement) {
  if (!file.has(group)) file.create_group(group);
  file.write_attribute<std::int32_t>(group, "levels", refinement.levels);
  file.write_attribute(group, "refine_particles", refinement.refine_particles);
  file.write_attribute(group, "refine_mass", refinement.refine_mass);
  file.write_attribute<std::int32_t>(group, "buffer", refinement.buffer);
  file.write_attribute<std::uint64_t>(group, "leaves_per_level",
                                      std::span<const std::uint64_t>(refinement.leaves_per_level));
}

model::AmrRefinement read_refinement(const File& file, const std::string& group) {
  model::AmrRefinement r;
  r.levels = file.read_attribute_scalar<std::int32_t>(group, "levels");
  r.refine_particles = file.read_attribute_scalar<double>(group, "refine_particles");
  r.refine_mass = file.read_attribute_scalar<double>(group, "refine_mass");
  r.buffer = file.read_attribute_scalar<std::int32_t>(group, "buffer");
  r.leaves_per_level = file.read_attribute<std::uint64_t>(group, "leaves_per_level");
  if (r.levels < 0 || r.levels > 15 || r.leaves_per_level.size() != static_cast<std::size_t>(r.levels) + 1 ||
      !(r.refine_particles > 0) || !std::isfinite(r.refine_particles) || r.buffer < 0)
    throw core::Error::input(
        "{}: {} has a refinement cic-project cannot have written (levels {}, refine_particles {}, buffer {}, "
        "{} counts per level)",
        file.path(), group, r.levels, r.refine_particles, r.buffer, r.leaves_per_level.size());
  return r;
}

model::AmrRefinement read_amr_refinement(const File& file) {
  if (!is_adaptive_grid(file))
    throw core::Error::input("{}: not an adaptive grid (no {}: made without cic-project --refine)", file.path(),
                             kLeaves);
  const model::AmrRefinement r = read_refinement(file, kLeaves);
  std::uint64_t total = 0;
  for (auto n : r.leaves_per_level) total += n;
  if (total != count_amr_leaves(file))
    throw core::Error::input("{}: {} holds {} leaves, its leaves_per_level add up to {}", file.path(), kLeaves,
                             count_amr_leaves(file), total);
  return r;
}

grid::GridMeta read_amr_grid_meta(const File& file) {
  if (!is_adaptive_grid(file))
    throw core::Error::input("{}: not an adaptive grid (no {}: made without cic-project --refine)", file.path(),
                             kLeaves);
  return read_grid_attributes(file, "/grid", false);
}

std::uint64_t count_amr_leaves(const File& file) { return file.dataset_info("/grid/leaves/key").elements(); }

template <typename Real>
void read_amr_leaf_rows_into(const File& file, std::uint64_t begin, std::uint64_t count,
                             model::BasicAmrLeaves<Real>& out) {
  if (const TypeInfo info = file.dataset_info("/grid/leaves/density"); info.cls != TypeInfo::Class::floating)
    throw core::Error::input("{}: /grid/leaves/density is {}, expected floating point", file.path(), info.describe());
  out.key.resize(count);
  out.density.resize(count);
  file.read_rows_into<std::uint64_t>("/grid/leaves/key", begin, count, out.key);
  file.read_rows_into<Real>("/grid/leaves/density", begin, count, out.density);
  // The invariants every reader relies on: keys ascending, the level in the key, densities finite and
  // >= 0. The levels are read a piece at a time: they are only checked, on lib/io's threads; the first
  // leaf that fails is named, whichever thread met it.
  constexpr std::uint64_t kPiece = std::uint64_t{1} << 20;
  std::vector<std::int8_t> level;
  for (std::uint64_t from = 0; from < count; from += kPiece) {
    const std::uint64_t n_piece = std::min(kPiece, count - from);
    level.resize(n_piece);
    file.read_rows_into<std::int8_t>("/grid/leaves/level", begin + from, n_piece, level);
    std::atomic<std::uint64_t> bad{n_piece};
    core::parallel_for(io_threads(), n_piece, kRowsPerTask, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        const std::size_t n = from + i;
        const std::uint64_t key = out.key[n];
        const Real density = out.density[n];
        if (static_cast<std::int8_t>(key & 0xF) != level[i] || (n > 0 && !(out.key[n - 1] < key)) ||
            !std::isfinite(density) || density < 0) {
          for (std::uint64_t seen = bad; i < seen && !bad.compare_exchange_weak(seen, i);) {}
          return;
        }
      }
    });
    if (bad < n_piece) {
      const std::size_t i = bad, n = from + i;
      throw core::Error::input(
          "{}: leaf {} of /grid/leaves (key {}, level {}, density {}) is not a leaf cic-project writes "
          "(keys ascending, the level in the key's low 4 bits, densities finite and not negative)",
          file.path(), begin + n, out.key[n], level[i], out.density[n]);
    }
  }
}

template <typename Real>
model::BasicAmrLeaves<Real> read_amr_leaf_rows(const File& file, std::uint64_t begin, std::uint64_t count) {
  model::BasicAmrLeaves<Real> out;
  read_amr_leaf_rows_into(file, begin, count, out);
  return out;
}

namespace {

// The rows of the leaves with keys in [key_begin, key_end): a binary search of /grid/leaves/key.
std::pair<std::uint64_t, std::uint64_t> leaf_rows(const File& file, std::uint64_t key_begin, std::uint64_t key_end) {
  if (key_end <= key_begin) return {0, 0};
  return {file.first_row_not_below<std::uint64_t>("/grid/leaves/key", key_begin),
          file.first_row_not_below<std::uint64_t>("/grid/leaves/key", key_end)};
}

}  // namespace

template <typename Real>
void read_amr_leaves_into(const File& file, std::uint64_t key_begin, std::uint64_t key_end,
                          model::BasicAmrLeaves<Real>& out) {
  const auto [b, e] = leaf_rows(file, key_begin, key_end);
  read_amr_leaf_rows_into(file, b, e - b, out);
}

template <typename Real>
model::BasicAmrLeaves<Real> read_amr_leaves(const File& file, std::uint64_t key_begin, std::uint64_t key_end) {
  model::BasicAmrLeaves<Real> out;
  read_amr_leaves_into(file, key_begin, key_end, out);
  return out;
}

template <typename Real>
AmrLeavesAbove<Real> read_amr_leaves_above(const File& file, std::uint64_t key_begin, std::uint64_t key_end,
                                           double above) {
  AmrLeavesAbove<Real> out;
  const auto [b, e] = leaf_rows(file, key_begin, key_end);
  out.read = e - b;
  constexpr std::uint64_t kBatch = std::uint64_t{1} << 20;
  model::BasicAmrLeaves<Real> batch;
  std::uint64_t last_key = 0;  // of the batch before
  for (std::uint64_t row = b; row < e; row += kBatch) {
    read_amr_leaf_rows_into(file, row, std::min(kBatch, e - row), batch);
    // Each batch is checked on its own; the keys ascend across batches too.
    if (row > b && !(last_key < batch.key.front()))
      throw core::Error::input("{}: leaf {} of /grid/leaves (key {}) does not follow the leaf before it in key order",
                               file.path(), row, batch.key.front());
    // Kept on lib/io's threads, each task's leaves in a list of its own, joined in order.
    const std::size_t tasks = (batch.size() + kRowsPerTask - 1) / kRowsPerTask;
    std::vector<std::vector<std::uint32_t>> kept(tasks);
    std::vector<double> densest(tasks, 0.0);
    core::parallel_for(io_threads(), batch.size(), kRowsPerTask, [&](std::size_t from, std::size_t to, int) {
      const std::size_t task = from / kRowsPerTask;
      for (std::size_t i = from; i < to; ++i) {
        const double density = batch.density[i];
        densest[task] = std::max(densest[task], density);
        if (density > above) kept[task].push_back(static_cast<std::uint32_t>(i));
      }
    });
    for (std::size_t task = 0; task < tasks; ++task) {
      out.densest = std::max(out.densest, densest[task]);
      for (const std::uint32_t i : kept[task]) {
        out.leaves.key.push_back(batch.key[i]);
        out.leaves.density.push_back(batch.density[i]);
      }
    }
    last_key = batch.key.back();
  }
  return out;
}

template model::BasicAmrLeaves<float> read_amr_leaf_rows(const File&, std::uint64_t, std::uint64_t);
template model::BasicAmrLeaves<double> read_amr_leaf_rows(const File&, std::uint64_t, std::uint64_t);
template model::BasicAmrLeaves<float> read_amr_leaves(const File&, std::uint64_t, std::uint64_t);
template model::BasicAmrLeaves<double> read_amr_leaves(const File&, std::uint64_t, std::uint64_t);
template void read_amr_leaves_into(const File&, std::uint64_t, std::uint64_t, model::BasicAmrLeaves<float>&);
template void read_amr_leaves_into(const File&, std::uint64_t, std::uint64_t, model::BasicAmrLeaves<double>&);
template AmrLeavesAbove<float> read_amr_leaves_above(const File&, std::uint64_t, std::uint64_t, double);
template AmrLeavesAbove<double> read_amr_leaves_above(const File&, std::uint64_t, std::uint64_t, double);

grid::GridMeta read_mesh_meta(const File& file) {
  return is_adaptive_grid(file) ? read_amr_grid_meta(file) : read_grid_meta(file);
}

}  // namespace phew::io

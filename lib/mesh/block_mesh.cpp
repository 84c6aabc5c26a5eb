#include <phew/mesh/block_mesh.hpp>

#include <phew/core/error.hpp>
#include <phew/mpi/route.hpp>

namespace phew::mesh {

template <typename Real>
BasicBlockMesh<Real>::BasicBlockMesh(const grid::GridGeometry& grid, const mpi::BlockDecomposition& blocks,
                                     core::RawVector<Real> block, const mpi::Comm& comm)
    : grid_(grid), shape_(grid.shape), density_(std::move(block)) {
  const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
  lo_ = box.lo;
  n_ = box.size();
  local_ = static_cast<std::size_t>(box.cells());
  whole_planes_ = n_[1] == shape_[1] && n_[2] == shape_[2];
  first_cell_ = grid::linear_index(lo_[0], lo_[1], lo_[2], shape_[1], shape_[2]);
  if (density_.size() != local_)
    throw core::Error::internal("block mesh: {} densities for a block of {} cells", density_.size(), local_);
  std::size_t o = 0;
  for (std::int64_t di = -1; di <= 1; ++di)
    for (std::int64_t dj = -1; dj <= 1; ++dj)
      for (std::int64_t dk = -1; dk <= 1; ++dk)
        if (di || dj || dk) offsets_[o++] = grid::linear_index(di, dj, dk, n_[1], n_[2]);

  // The shell in the padded block's C order: each ghost's global cell, and a request to its owner.
  struct Request {
    std::int32_t from, to;
    std::int64_t cell;  // global index
  };
  std::vector<Request> requests;  // per ghost with a cell
  if (local_ > 0) {
    for (std::int64_t i = -1; i <= n_[0]; ++i)
      for (std::int64_t j = -1; j <= n_[1]; ++j)
        for (std::int64_t k = -1; k <= n_[2]; ++k) {
          const bool inner = i >= 0 && j >= 0 && k >= 0 && i < n_[0] && j < n_[1] && k < n_[2];
          if (inner) {
            k = n_[2] - 1;  // skip to the row's far ghost
            continue;
          }
          mpi::Extent3 g{lo_[0] + i, lo_[1] + j, lo_[2] + k};
          bool inside = true;
          for (std::size_t d = 0; d < 3; ++d) {
            if (g[d] < 0 || g[d] >= shape_[d]) inside = grid.periodic;
            g[d] = grid::fold_index(g[d], shape_[d], true);
          }
          if (!inside) {
            ghost_cell_.push_back(-1);
            continue;
          }
          const std::int64_t cell = grid::linear_index(g[0], g[1], g[2], shape_[1], shape_[2]);
          ghost_cell_.push_back(cell);
          requests.push_back({comm.rank(), blocks.owner(g), cell});
        }
  }
  const std::size_t ghosts = ghost_cell_.size();
  density_.resize(local_ + ghosts, -std::numeric_limits<Real>::infinity());

  // What this rank receives from each owner: its ghosts with a cell, grouped by owner in ghost order.
  const auto ranks = static_cast<std::size_t>(comm.size());
  receive_at_.assign(ranks + 1, 0);
  for (const Request& q : requests) ++receive_at_[static_cast<std::size_t>(q.to) + 1];
  for (std::size_t r = 0; r < ranks; ++r) receive_at_[r + 1] += receive_at_[r];
  receive_slot_.resize(requests.size());
  {
    std::vector<std::size_t> at(receive_at_.begin(), receive_at_.end() - 1);
    std::size_t n = 0;
    for (std::size_t g = 0; g < ghosts; ++g)
      if (ghost_cell_[g] >= 0) receive_slot_[at[static_cast<std::size_t>(requests[n++].to)]++] = local_ + g;
  }
  // What it sends: the requests it receives, grouped by source in rank order, each in its ghost order.
  const std::vector<Request> asked = mpi::route(comm, requests, [](const Request& q) { return q.to; });
  send_at_.assign(ranks + 1, 0);
  send_slot_.reserve(asked.size());
  for (const Request& q : asked) {
    ++send_at_[static_cast<std::size_t>(q.from) + 1];
    const mpi::Extent3 c{q.cell / (shape_[1] * shape_[2]), q.cell / shape_[2] % shape_[1], q.cell % shape_[2]};
    send_slot_.push_back(
        static_cast<std::size_t>(grid::linear_index(c[0] - lo_[0], c[1] - lo_[1], c[2] - lo_[2], n_[1], n_[2])));
  }
  for (std::size_t r = 0; r < ranks; ++r) send_at_[r + 1] += send_at_[r];

  // The ghosts' densities.
  std::vector<Real> out(send_slot_.size());
  for (std::size_t i = 0; i < send_slot_.size(); ++i) out[i] = density_[send_slot_[i]];
  std::vector<std::uint64_t> counts(ranks);
  for (std::size_t r = 0; r < ranks; ++r) counts[r] = send_at_[r + 1] - send_at_[r];
  const std::vector<Real> in = comm.all_to_all<Real>(out, counts);
  for (std::size_t i = 0; i < in.size(); ++i) density_[receive_slot_[i]] = in[i];
}

template <typename Real>
std::size_t BasicBlockMesh<Real>::slot_at(const std::array<std::int64_t, 3>& c) const {
  const bool in_x = c[0] >= 0 && c[0] < n_[0], in_y = c[1] >= 0 && c[1] < n_[1], in_z = c[2] >= 0 && c[2] < n_[2];
  if (in_x && in_y && in_z) return static_cast<std::size_t>(grid::linear_index(c[0], c[1], c[2], n_[1], n_[2]));
  // The shell cells before padded cell (p, q, r) in the padded block's C order: its two end planes are
  // whole, the planes between hold their first and last rows whole and two cells of every other row.
  const std::int64_t p = c[0] + 1, q = c[1] + 1, r = c[2] + 1;
  const std::int64_t row = n_[2] + 2, plane = (n_[1] + 2) * row, inner_plane = plane - n_[1] * n_[2];
  std::int64_t at;
  if (!in_x) {
    at = (p == 0 ? 0 : plane + n_[0] * inner_plane) + q * row + r;
  } else {
    at = plane + (p - 1) * inner_plane;
    if (!in_y)
      at += (q == 0 ? 0 : row + 2 * n_[1]) + r;
    else
      at += row + 2 * (q - 1) + (r == 0 ? 0 : 1);
  }
  return local_ + static_cast<std::size_t>(at);
}

template <typename Real>
std::array<std::int64_t, 3> BasicBlockMesh<Real>::cell(std::size_t s) const {
  const std::int64_t g = global_index(s);
  return {g / (shape_[1] * shape_[2]), g / shape_[2] % shape_[1], g % shape_[2]};
}

template <typename Real>
std::optional<std::array<double, 27>> BasicBlockMesh<Real>::neighbourhood(std::size_t s) const {
  const auto c = local_cell(s);
  std::array<double, 27> out{};
  for (std::int64_t di = -1; di <= 1; ++di)
    for (std::int64_t dj = -1; dj <= 1; ++dj)
      for (std::int64_t dk = -1; dk <= 1; ++dk) {
        const double v = density_[slot_at({c[0] + di, c[1] + dj, c[2] + dk})];
        if (v == -std::numeric_limits<double>::infinity()) return std::nullopt;  // Real's -inf too
        out[static_cast<std::size_t>((di + 1) * 9 + (dj + 1) * 3 + (dk + 1))] = v;
      }
  return out;
}

template <typename Real>
void BasicBlockMesh<Real>::update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values,
                                                const mpi::Comm& comm) const {
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> out;
  std::vector<std::uint64_t> counts(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    for (std::size_t i = send_at_[r]; i < send_at_[r + 1]; ++i)
      if (const std::size_t s = send_slot_[i]; members.contains(s)) {
        out.push_back(values[members.rank(s)]);
        ++counts[r];
      }
  const std::vector<std::int64_t> in = comm.all_to_all<std::int64_t>(out, counts);
  std::size_t k = 0;
  for (const std::size_t g : receive_slot_)
    if (members.contains(g)) {
      if (k == in.size())
        throw core::Error::internal("ghost exchange: rank {} received {} member values, it holds more ghost members",
                                    comm.rank(), in.size());
      values[members.rank(g)] = in[k++];
    }
  if (k != in.size())
    throw core::Error::internal("ghost exchange: rank {} received {} member values for {} ghost members", comm.rank(),
                                in.size(), k);
}

template class BasicBlockMesh<double>;
template class BasicBlockMesh<float>;

}  // namespace phew::mesh

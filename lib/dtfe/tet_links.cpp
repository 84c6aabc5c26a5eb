#include <phew/dtfe/tet_links.hpp>

#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>

namespace phew::dtfe::detail {
namespace {

constexpr std::int32_t kUnlinked = std::numeric_limits<std::int32_t>::min();

// Canonical tetrahedra by their vertex lists: those with lowest vertex v are [start[v], start[v+1]).
class TetIndex {
 public:
  TetIndex(const core::RawVector<Tet>& tets, std::size_t n_points) : tets_(tets), start_(n_points + 1, 0) {
    for (const Tet& t : tets) ++start_[static_cast<std::size_t>(t.vertex[0]) + 1];
    for (std::size_t v = 1; v <= n_points; ++v) start_[v] += start_[v - 1];
  }

  // The tetrahedron with these (ascending) vertices, or -1.
  std::int32_t find(const std::array<std::int32_t, 4>& key) const {
    const auto v = static_cast<std::size_t>(key[0]);
    auto first = tets_.begin() + start_[v], last = tets_.begin() + start_[v + 1];
    auto it = std::lower_bound(first, last, key, [](const Tet& t, const std::array<std::int32_t, 4>& k) {
      return std::lexicographical_compare(t.vertex + 1, t.vertex + 4, k.begin() + 1, k.end());
    });
    if (it == last || !std::equal(it->vertex + 1, it->vertex + 4, key.begin() + 1)) return -1;
    return static_cast<std::int32_t>(it - tets_.begin());
  }

 private:
  const core::RawVector<Tet>& tets_;
  std::vector<std::uint32_t> start_;
};

// The vertices of t other than vertex[k], with `extra`, ascending.
std::array<std::int32_t, 4> face_with(const Tet& t, int k, std::int32_t extra) {
  std::array<std::int32_t, 4> key{};
  int j = 0;
  for (int i = 0; i < 4; ++i)
    if (i != k) key[static_cast<std::size_t>(j++)] = t.vertex[i];
  key[3] = extra;
  std::sort(key.begin(), key.end());
  return key;
}

// The index in t of its vertex that is not in u (u shares a face with t).
int vertex_not_in(const Tet& t, const Tet& u) {
  for (int i = 0; i < 4; ++i)
    if (std::find(u.vertex, u.vertex + 4, t.vertex[i]) == u.vertex + 4) return i;
  return -1;
}

}  // namespace

void link_mirrors(const core::RawVector<Tet>& tets, core::RawVector<TetNeighbours>& neighbours, std::size_t n_points,
                  int threads) {
  const std::size_t m = tets.size();
  const TetIndex index(tets, n_points);
  // 1. Each tetrahedron follows its own mirrors; only its own links are written.
  std::vector<char> open(m, 0);  // tetrahedra with a face still unlinked
  core::parallel_for(threads, m, 1 << 15, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      std::int32_t* across = neighbours[i].across;
      for (int k = 0; k < 4; ++k) {
        const std::int32_t nb = across[k];
        if (nb >= 0) continue;
        const std::int32_t found = nb == -1 ? -1 : index.find(face_with(tets[i], k, -(nb + 2)));
        across[k] = found >= 0 ? found : kUnlinked;
        if (found < 0) open[i] = 1;
      }
    }
  });
  // 2. A link found from one side only is copied to the other (read here, written after).
  std::vector<std::vector<std::array<std::int32_t, 3>>> back(static_cast<std::size_t>(std::max(threads, 1)));
  core::parallel_for(threads, m, 1 << 15, [&](std::size_t b, std::size_t e, int thread) {
    for (std::size_t i = b; i < e; ++i)
      for (std::int32_t j : neighbours[i].across) {
        if (j < 0 || !open[static_cast<std::size_t>(j)]) continue;
        const int k = vertex_not_in(tets[static_cast<std::size_t>(j)], tets[i]);
        if (k >= 0 && neighbours[static_cast<std::size_t>(j)].across[k] == kUnlinked)
          back[static_cast<std::size_t>(thread)].push_back({j, k, static_cast<std::int32_t>(i)});
      }
  });
  for (const auto& list : back)
    for (const auto& [j, k, i] : list) neighbours[static_cast<std::size_t>(j)].across[k] = i;
  // 3. Faces unlinked on both sides are matched by their vertices; a face left alone is on the hull.
  std::vector<std::tuple<std::array<std::int32_t, 3>, std::int32_t, int>> faces;
  for (std::size_t i = 0; i < m; ++i)
    if (open[i])
      for (int k = 0; k < 4; ++k)
        if (neighbours[i].across[k] == kUnlinked) {
          const auto key = face_with(tets[i], k, -1);  // -1 sorts first: the face is key[1..3]
          faces.emplace_back(std::array<std::int32_t, 3>{key[1], key[2], key[3]}, static_cast<std::int32_t>(i), k);
        }
  std::sort(faces.begin(), faces.end());
  for (std::size_t a = 0; a < faces.size();) {
    std::size_t z = a + 1;
    while (z < faces.size() && std::get<0>(faces[z]) == std::get<0>(faces[a])) ++z;
    if (z - a > 2) throw core::Error::internal("slab triangulation: a face of {} tetrahedra", z - a);
    std::int32_t* across_a = neighbours[static_cast<std::size_t>(std::get<1>(faces[a]))].across;
    if (z - a == 1) {
      across_a[std::get<2>(faces[a])] = -1;
    } else {
      across_a[std::get<2>(faces[a])] = std::get<1>(faces[a + 1]);
      neighbours[static_cast<std::size_t>(std::get<1>(faces[a + 1]))].across[std::get<2>(faces[a + 1])] =
          std::get<1>(faces[a]);
    }
    a = z;
  }
}

}  // namespace phew::dtfe::detail

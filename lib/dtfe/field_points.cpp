#include <phew/dtfe/field_points.hpp>

#include <phew/core/morton.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/dtfe/predicates.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace phew::dtfe {
namespace {

// 21 bits of each coordinate interleaved: neighbours in space are near each other in memory, which
// is what the triangulation's walks and the ray marching want from the vertex order.
std::uint64_t morton(std::int32_t u, std::int32_t v, std::int32_t w) {
  auto spread = [](std::int64_t q) {
    return core::spread_bits_3(
        static_cast<std::uint64_t>(std::clamp<std::int64_t>((q + kQuantMax) >> 9, 0, (1 << 21) - 1)));
  };
  return spread(u) | (spread(v) << 1) | (spread(w) << 2);
}

struct Item {
  std::uint64_t key;
  std::int32_t q[3];
  double mass;
};

}  // namespace

double FieldPoints::total_mass() const { return std::accumulate(mass.begin(), mass.end(), 0.0); }

double quantum(const FieldGeometry& g) {
  const auto h = g.half_width();
  return std::max({h[0], h[1], h[2]}) / static_cast<double>(kQuantMax);
}

namespace {

Item make_item(double u, double v, double w, double mass, double inv) {
  Item it;
  const double r[3] = {u, v, w};
  for (int d = 0; d < 3; ++d) {
    const double q = std::nearbyint(r[d] * inv);
    it.q[d] = static_cast<std::int32_t>(std::clamp(q, -static_cast<double>(kQuantMax), static_cast<double>(kQuantMax)));
  }
  it.key = morton(it.q[0], it.q[1], it.q[2]);
  it.mass = mass;
  return it;
}

// Sorts the items (Morton key, then coordinates, then mass) and merges exact duplicates. A total
// order: items comparing equal are equal, so sorting runs on the threads and merging them pairwise
// gives the same bytes as one sort.
FieldPoints sorted_points(core::RawVector<Item>& items, double scale, int threads) {
  const std::size_t n = items.size();
  auto before = [](const Item& a, const Item& b) {
    if (a.key != b.key) return a.key < b.key;
    for (int d = 0; d < 3; ++d)
      if (a.q[d] != b.q[d]) return a.q[d] < b.q[d];
    return a.mass < b.mass;
  };
  const auto parts = static_cast<std::size_t>(std::clamp(threads, 1, 64));
  std::vector<std::size_t> edge(parts + 1);
  for (std::size_t p = 0; p <= parts; ++p) edge[p] = n * p / parts;
  auto at = [](core::RawVector<Item>& v, std::size_t i) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
  core::parallel_for(threads, parts, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p) std::sort(at(items, edge[p]), at(items, edge[p + 1]), before);
  });
  if (parts > 1) {
    core::RawVector<Item> merged(n);
    for (std::size_t width = 1; width < parts; width *= 2) {
      const std::size_t pairs = (parts + 2 * width - 1) / (2 * width);
      core::parallel_for(threads, pairs, 1, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t k = b; k < e; ++k) {
          const std::size_t lo = edge[2 * width * k], mid = edge[std::min(parts, 2 * width * k + width)],
                            hi = edge[std::min(parts, 2 * width * (k + 1))];
          std::merge(at(items, lo), at(items, mid), at(items, mid), at(items, hi), at(merged, lo), before);
        }
      });
      items.swap(merged);
    }
  }
  FieldPoints out;
  out.scale = scale;
  out.n_selected = n;
  out.q.reserve(3 * n);
  out.mass.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Item& it = items[i];
    if (i > 0 && std::equal(it.q, it.q + 3, items[i - 1].q)) {
      out.mass.back() += it.mass;  // an exact duplicate: one vertex carrying both masses
      continue;
    }
    out.q.insert(out.q.end(), it.q, it.q + 3);
    out.mass.push_back(it.mass);
  }
  return out;
}

}  // namespace

FieldPoints quantise_field(std::span<const double> rel, std::span<const double> mass, double scale, int threads) {
  const double inv = 1.0 / scale;
  core::RawVector<Item> items(mass.size());
  core::parallel_for(threads, items.size(), 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) items[i] = make_item(rel[3 * i], rel[3 * i + 1], rel[3 * i + 2], mass[i], inv);
  });
  return sorted_points(items, scale, threads);
}

FieldPoints select_field(std::span<const double> position, std::span<const double> mass, const FieldGeometry& g,
                         const std::array<double, 3>& box) {
  const auto ax = view_axes(g.axis);
  const auto h = g.half_width();
  std::vector<double> rel;
  std::vector<double> m;
  bool outside = box[static_cast<std::size_t>(ax[0])] > 0 || box[static_cast<std::size_t>(ax[1])] > 0;
  for (std::size_t i = 0; i < mass.size(); ++i) {
    // Every periodic image of the particle inside the window, per axis (u, v, w).
    std::array<std::vector<double>, 3> offs;
    for (int k = 0; k < 3; ++k) {
      const auto d = static_cast<std::size_t>(ax[static_cast<std::size_t>(k)]);
      const double x = position[3 * i + d];
      const double hk = h[static_cast<std::size_t>(k)];
      // The same arithmetic as ParticleIndex::visit: (position + image shift) - centre.
      if (box[d] > 0) {
        const double first = std::ceil((g.center[d] - hk - x) / box[d]) - 1;
        const double last = std::floor((g.center[d] + hk - x) / box[d]) + 1;
        for (double s = first; s <= last; s += 1) {
          const double y = (x + s * box[d]) - g.center[d];
          if (y >= -hk && y < hk) offs[static_cast<std::size_t>(k)].push_back(y);
        }
      } else {
        const double y = x - g.center[d];
        if (y >= -hk && y < hk) offs[static_cast<std::size_t>(k)].push_back(y);
      }
    }
    if (!offs[2].empty() && (offs[0].empty() || offs[1].empty())) outside = true;  // in the slab, beside the window
    for (double u : offs[0])
      for (double v : offs[1])
        for (double w : offs[2]) {
          rel.insert(rel.end(), {u, v, w});
          m.push_back(mass[i]);
        }
  }
  FieldPoints out = quantise_field(rel, m, quantum(g));
  out.empty_outside = !outside;
  return out;
}

FieldPoints field_points(const grid::ParticleIndex& index, const FieldGeometry& g, int threads) {
  const auto ax = view_axes(g.axis);
  const auto hv = g.half_width();  // along (u, v, w)
  std::array<double, 3> half{};
  for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(ax[k])] = hv[k];
  const double scale = quantum(g), inv = 1.0 / scale;
  core::RawVector<Item> items;
  items.reserve(index.count(g.center, half));
  index.visit(g.center, half, [&](double x, double y, double z, double mass) {
    const double r[3] = {x, y, z};
    items.push_back(make_item(r[ax[0]], r[ax[1]], r[ax[2]], mass, inv));
  });
  return sorted_points(items, scale, threads);
}

}  // namespace phew::dtfe

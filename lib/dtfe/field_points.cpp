#include <phew/dtfe/field_points.hpp>

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
    std::uint64_t x = static_cast<std::uint64_t>(std::clamp<std::int64_t>((q + kQuantMax) >> 9, 0, (1 << 21) - 1));
    x = (x | (x << 32)) & 0x1f00000000ffffULL;
    x = (x | (x << 16)) & 0x1f0000ff0000ffULL;
    x = (x | (x << 8)) & 0x100f00f00f00f00fULL;
    x = (x | (x << 4)) & 0x10c30c30c30c30c3ULL;
    x = (x | (x << 2)) & 0x1249249249249249ULL;
    return x;
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

FieldPoints quantise_field(std::span<const double> rel, std::span<const double> mass, double scale) {
  const std::size_t n = mass.size();
  std::vector<Item> items(n);
  const double inv = 1.0 / scale;
  for (std::size_t i = 0; i < n; ++i) {
    Item& it = items[i];
    for (int d = 0; d < 3; ++d) {
      const double q = std::nearbyint(rel[3 * i + static_cast<std::size_t>(d)] * inv);
      it.q[d] =
          static_cast<std::int32_t>(std::clamp(q, -static_cast<double>(kQuantMax), static_cast<double>(kQuantMax)));
    }
    it.key = morton(it.q[0], it.q[1], it.q[2]);
    it.mass = mass[i];
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.key != b.key) return a.key < b.key;
    for (int d = 0; d < 3; ++d)
      if (a.q[d] != b.q[d]) return a.q[d] < b.q[d];
    return a.mass < b.mass;
  });
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

FieldPoints field_points(const grid::ParticleIndex& index, const FieldGeometry& g) {
  const auto ax = view_axes(g.axis);
  const auto hv = g.half_width();  // along (u, v, w)
  std::array<double, 3> half{};
  for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(ax[k])] = hv[k];
  std::vector<double> rel;
  std::vector<double> m;
  index.visit(g.center, half, [&](double x, double y, double z, double mass) {
    const double r[3] = {x, y, z};
    rel.insert(rel.end(), {r[ax[0]], r[ax[1]], r[ax[2]]});
    m.push_back(mass);
  });
  return quantise_field(rel, m, quantum(g));
}

}  // namespace phew::dtfe

// Load balancing of many fields on many ranks, simulated from measured per-field costs (Rangel et
// al. Sec. IV C-E and Figs. 10-11 and 13): what this machine is too small to run.
//
//   dtfe_schedule_sim MAPS.h5 [--ranks 64,256,1024,4096,16384] [--tile K] [--latency SECONDS]
//                              [--seed S] [--json FILE]
//
// MAPS.h5 comes from dtfe-surface (one rank, --schedule none, so that /timing holds each field's own
// triangulation and interpolation seconds). The fields are replicated K x K x K times over a box K
// times larger (--tile, default 1), which keeps the clustering of the field centres and scales their
// number. For each rank count the box is cut as the tool cuts it (VolumeDecomposition), each rank
// times one random field of its own, the workload model is fitted to those samples (load_model.hpp),
// and three schedules are simulated with the measured costs: none, model (communication list + bin
// packing) and dynamic (work queue). Prints makespans, speedups, and the histogram of the model's
// relative prediction errors (the analogue of the paper's Fig. 11) at the largest rank count.
#include <phew/core/parse.hpp>
#include <phew/dtfe/decomposition.hpp>
#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/load_model.hpp>
#include <phew/dtfe/schedule.hpp>
#include <phew/io/maps_file.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace phew;
using namespace phew::dtfe;

int main(int argc, char** argv) {
  const mpi::Environment environment(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: dtfe_schedule_sim MAPS.h5 [--ranks 64,256,...] [--tile K] [--latency S] [--json FILE]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::vector<int> rank_counts{64, 256, 1024, 4096, 16384};
  int tile = 1;
  double latency = 1e-4;
  std::uint64_t seed = 1;
  std::string json;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") {
      rank_counts = core::parse_list<int>(v, "--ranks");
    } else if (k == "--tile")
      tile = core::parse_number<int>(v, "--tile");
    else if (k == "--latency")
      latency = core::parse_number<double>(v, "--latency");
    else if (k == "--seed")
      seed = core::parse_number<std::uint64_t>(v, "--seed");
    else if (k == "--json")
      json = v;
  }
  std::vector<double> centre, tri, interp, size, depth, margin, box;
  std::vector<std::int64_t> np, axis;
  {
    const io::File f = io::File::open_read(path);  // closed before MPI_Finalize
    for (const model::MapRow& r : io::read_map_rows(f)) {
      centre.insert(centre.end(), r.center.begin(), r.center.end());
      np.push_back(r.n_particles);
      size.push_back(r.size);
      depth.push_back(r.depth);
      margin.push_back(r.margin);
      axis.push_back(r.axis);
    }
    for (const model::MapTiming& t : io::read_map_timing(f)) {
      tri.push_back(t.triangulation);
      interp.push_back(t.interpolation);
    }
    const auto b = io::read_maps_header(f).meta.box_size;
    if (b[0] > 0) box.assign(b.begin(), b.end());
  }
  const std::size_t m = np.size();
  if (m == 0 || box.size() != 3) {
    std::fprintf(stderr, "%s: no fields or no box\n", path.c_str());
    return 3;
  }
  // The replicated field population.
  std::vector<std::array<double, 3>> c;
  std::vector<double> n, t_tri, t_interp;
  for (int a = 0; a < tile; ++a)
    for (int b = 0; b < tile; ++b)
      for (int d = 0; d < tile; ++d)
        for (std::size_t i = 0; i < m; ++i) {
          c.push_back({centre[3 * i] + a * box[0], centre[3 * i + 1] + b * box[1], centre[3 * i + 2] + d * box[2]});
          n.push_back(static_cast<double>(np[i]));
          t_tri.push_back(tri[i]);
          t_interp.push_back(interp[i]);
        }
  std::vector<double> cost(n.size());
  for (std::size_t k = 0; k < cost.size(); ++k) cost[k] = t_tri[k] + t_interp[k];
  const grid::Box domain{{0, 0, 0}, {tile * box[0], tile * box[1], tile * box[2]}, true};
  FieldGeometry g;
  g.size = size[0], g.depth = depth[0], g.margin = margin[0], g.axis = static_cast<int>(axis[0]), g.resolution = 1;
  const auto hv = g.half_width();
  const auto ax = view_axes(g.axis);
  std::array<double, 3> ghost{};
  for (std::size_t k = 0; k < 3; ++k) ghost[static_cast<std::size_t>(ax[k])] = hv[k];

  std::printf("%zu fields (%zu measured x %d^3 tiles), %.1f s of field work; latency %.0e s per message\n", cost.size(),
              m, tile, std::accumulate(cost.begin(), cost.end(), 0.0), latency);
  std::printf("%7s %6s %10s %10s %10s %10s %8s %8s %9s\n", "ranks", "dims", "ideal s", "none s", "model s", "dynamic s",
              "x model", "x dyn", "samples");
  std::ostringstream js;
  js << "{\n  \"fields\": " << cost.size() << ", \"tile\": " << tile << ", \"latency\": " << latency
     << ",\n  \"runs\": [\n";
  std::vector<double> err_tri, err_interp;
  for (std::size_t ri = 0; ri < rank_counts.size(); ++ri) {
    const int ranks = rank_counts[ri];
    const VolumeDecomposition blocks(domain, ghost, ranks);
    std::vector<int> owner(cost.size());
    std::vector<std::vector<std::size_t>> mine(static_cast<std::size_t>(ranks));
    for (std::size_t k = 0; k < cost.size(); ++k) {
      owner[k] = blocks.owner(c[k]);
      mine[static_cast<std::size_t>(owner[k])].push_back(k);
    }
    // One random field per rank with fields: the model's samples (as every rank would time one).
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(ranks));
    std::vector<double> sn, st, si;
    for (const auto& v : mine)
      if (!v.empty()) {
        const std::size_t k = v[rng() % v.size()];
        sn.push_back(n[k]), st.push_back(t_tri[k]), si.push_back(t_interp[k]);
      }
    WorkloadModel model{fit_triangulation(sn, st), fit_power_law(sn, si)};
    std::vector<double> predicted(cost.size());
    for (std::size_t k = 0; k < cost.size(); ++k) predicted[k] = model.predict(n[k]);
    const auto none = simulate_none(cost, owner, ranks);
    const auto mod = simulate_model(cost, predicted, owner, ranks, latency);
    const auto dyn = simulate_dynamic(cost, predicted, owner, ranks, latency);
    const double ideal = none.busy / ranks;
    const auto& dm = blocks.dims();
    std::printf("%7d %2dx%2dx%-2d %10.2f %10.2f %10.2f %10.2f %8.2f %8.2f %9zu\n", ranks, dm[0], dm[1], dm[2], ideal,
                none.makespan, mod.makespan, dyn.makespan, none.makespan / mod.makespan, none.makespan / dyn.makespan,
                sn.size());
    js << "    {\"ranks\": " << ranks << ", \"ideal\": " << ideal << ", \"none\": " << none.makespan
       << ", \"model\": " << mod.makespan << ", \"dynamic\": " << dyn.makespan
       << ", \"model_messages\": " << mod.messages << ", \"dynamic_messages\": " << dyn.messages
       << ", \"samples\": " << sn.size() << ", \"c\": " << model.triangulation.c
       << ", \"alpha\": " << model.interpolation.alpha << ", \"beta\": " << model.interpolation.beta << "}"
       << (ri + 1 < rank_counts.size() ? ",\n" : "\n");
    if (ri + 1 == rank_counts.size()) {
      for (std::size_t k = 0; k < m; ++k) {  // the measured fields (not their copies)
        if (t_tri[k] > 0) err_tri.push_back((model.triangulation.predict(n[k]) - t_tri[k]) / t_tri[k]);
        if (t_interp[k] > 0) err_interp.push_back((model.interpolation.predict(n[k]) - t_interp[k]) / t_interp[k]);
      }
    }
  }
  js << "  ],\n";
  // Histograms of the relative errors, 10 % bins from -100 % to +200 % (the rest in the end bins).
  auto histogram = [&](const std::vector<double>& e, const char* name) {
    std::map<int, int> h;
    for (double x : e) h[std::clamp(static_cast<int>(std::floor(x * 10)), -10, 20)]++;
    double mean = 0;
    for (double x : e) mean += x;
    mean /= std::max<std::size_t>(1, e.size());
    std::vector<double> s(e);
    std::sort(s.begin(), s.end());
    const double med = s.empty() ? 0 : s[s.size() / 2];
    std::printf(
        "\n%s model: relative error (predicted - measured) / measured over %zu fields: mean %+.1f %%, median %+.1f "
        "%%\n",
        name, e.size(), 100 * mean, 100 * med);
    js << "  \"" << name << "_error\": {\"mean\": " << mean << ", \"median\": " << med << ", \"bins\": {";
    bool first = true;
    for (const auto& [b, count] : h) {
      std::printf(
          "  %+5d%% .. %+5d%%  %6d  %s\n", b * 10, b * 10 + 10, count,
          std::string(static_cast<std::size_t>(60.0 * count / static_cast<double>(e.size()) + 0.5), '#').c_str());
      js << (first ? "" : ", ") << "\"" << b * 10 << "\": " << count;
      first = false;
    }
    js << "}}";
  };
  histogram(err_tri, "triangulation");
  js << ",\n";
  histogram(err_interp, "interpolation");
  js << "\n}\n";
  if (!json.empty()) std::ofstream(json) << js.str();
  return 0;
}

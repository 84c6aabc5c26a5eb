#include "text_export.hpp"

#include "io/atomic_output.hpp"
#include "mpi/agree.hpp"

#include <fmt/format.h>

namespace phew {
namespace {

template <typename T>
std::vector<T> gather(const std::vector<T>& v, const mpi::Comm& comm) {
  return comm.all_gatherv<T>(v);
}

}  // namespace

void export_catalogue_text(const std::string& output, const io::ClumpRows& c, const io::HaloRows& h,
                           const mpi::Comm& comm) {
  const auto id = gather(c.id, comm), lev = gather(c.level, comm), parent = gather(c.parent, comm),
             ncell = gather(c.n_cells, comm), halo = gather(c.halo, comm);
  const auto pos = gather(c.peak_position, comm), rho_minus = gather(c.saddle_density, comm),
             rho_plus = gather(c.peak_density, comm), rho_av = gather(c.mean_density, comm),
             mass = gather(c.mass, comm), rel = gather(c.relevance, comm), com = gather(c.center_of_mass, comm);
  const auto hid = gather(h.id, comm), hcell = gather(h.n_cells, comm), hclumps = gather(h.n_clumps, comm);
  const auto hpos = gather(h.peak_position, comm), hmass = gather(h.mass, comm);
  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    std::string txt = "  index  lev   parent  ncell    peak_x             peak_y             peak_z             "
                      "rho-               rho+               rho_av             mass_cl            relevance\n";
    std::string csv = "id,level,parent,halo,n_cells,peak_x,peak_y,peak_z,saddle_density,peak_density,mean_density,"
                      "mass,relevance,com_x,com_y,com_z\n";
    for (std::size_t i = 0; i < id.size(); ++i) {
      txt += fmt::format("{:7d} {:4d} {:8d} {:6d} {:18.10e} {:18.10e} {:18.10e} {:18.10e} {:18.10e} {:18.10e} {:18.10e} {:18.10e}\n",
                         id[i], lev[i], parent[i], ncell[i], pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], rho_minus[i],
                         rho_plus[i], rho_av[i], mass[i], rel[i]);
      csv += fmt::format("{},{},{},{},{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}\n",
                         id[i], lev[i], parent[i], halo[i], ncell[i], pos[3 * i], pos[3 * i + 1], pos[3 * i + 2],
                         rho_minus[i], rho_plus[i], rho_av[i], mass[i], rel[i], com[3 * i], com[3 * i + 1], com[3 * i + 2]);
    }
    std::string htxt = "  index  ncell    peak_x             peak_y             peak_z             mass               n_clumps\n";
    std::string hcsv = "id,n_cells,peak_x,peak_y,peak_z,mass,n_clumps\n";
    for (std::size_t i = 0; i < hid.size(); ++i) {
      htxt += fmt::format("{:7d} {:6d} {:18.10e} {:18.10e} {:18.10e} {:18.10e} {:8d}\n", hid[i], hcell[i], hpos[3 * i],
                          hpos[3 * i + 1], hpos[3 * i + 2], hmass[i], hclumps[i]);
      hcsv += fmt::format("{},{},{:.17g},{:.17g},{:.17g},{:.17g},{}\n", hid[i], hcell[i], hpos[3 * i], hpos[3 * i + 1],
                          hpos[3 * i + 2], hmass[i], hclumps[i]);
    }
    io::write_text_atomically(output + ".clumps.txt", txt);
    io::write_text_atomically(output + ".clumps.csv", csv);
    io::write_text_atomically(output + ".halos.txt", htxt);
    io::write_text_atomically(output + ".halos.csv", hcsv);
  });
}

}  // namespace phew

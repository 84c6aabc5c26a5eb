// Writing a Gadget-style HDF5 snapshot: the layout Gadget-2/4 write (/Header attributes, one
// /PartTypeN group), so that what phew writes (synth-particles) is read back by the same readers as a
// real simulation (gadget_hdf5.cpp).
#pragma once

#include <phew/io/h5.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/gadget_header.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace phew::snapshot {

using particles::GadgetHeader;
using particles::GadgetParticles;

// Writes /Header and /PartType<type>. float32 coordinates are rounded here, and a periodic coordinate
// that rounds up to BoxSize is written as 0, so that every coordinate lies in [0, BoxSize). Collective.
void write_gadget_hdf5(io::File& file, const GadgetHeader& header, const GadgetParticles& particles,
                       const mpi::Comm& comm);

}  // namespace phew::snapshot

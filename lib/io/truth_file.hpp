// The truth file beside a synthetic snapshot (synth-particles, docs/tools/synth-particles.md): what
// each particle is, what each component is and where it is at this snapshot, and where every component
// goes over the whole sequence.
#pragma once

#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/truth.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/truth.hpp's).
const Table<model::TruthParticle>& truth_particle_table();
const Table<model::TruthComponent>& truth_component_table();

// Collective.
void write_truth(File& file, const model::Truth& truth, const mpi::Comm& comm);
// The whole file. Throws Error(input) naming the file and object. Not collective.
model::Truth read_truth(const File& file);

}  // namespace phew::io

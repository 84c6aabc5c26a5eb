// The removal passes of one object whose particles are spread over the ranks: the first part of
// unbinding a halo too big for one rank (docs/unbind-method.md, "A halo over several ranks").
//
// Each rank gives its share of the object; the shares, in rank order, are in ascending particle ID
// (every ID of rank r below every ID of rank r + 1: what mpi::sort by ID leaves). The passes are
// unbind_object's (lib/unbind/passes.hpp) with every sum over the members carried from rank to rank
// in ID order, the spherical profile sorted across the ranks (gravity::DistributedSphericalProfile)
// and the shrinking spheres' exact sums added over them: the bound flags, energies, counts, centre and
// U are unbind_object's bits for any number of ranks. The properties are measure_properties' over the
// ranks (its sums carried the same way, its scans over the runs of the radius order). The tree
// potential: every rank gathers the pass's source set and walks the set's one tree for its own block
// (unbind::block_potential), so the walks are shared and each value is the one-rank one.
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/unbind/unbind.hpp>

namespace phew::unbind {

// Error(internal) for shares out of ID order; Error(input) for an ID given
// twice. The result: per particle of this rank's share, in the order given; the summary (counts and
// properties) over the whole object, the same on every rank. Collective.
ObjectResult unbind_spread_object(const mpi::Comm& comm, const ObjectParticles& share, const ObjectSpec& spec,
                                  const Frame& frame, const Params& params);

}  // namespace phew::unbind

// Agreement on failure: a phase whose errors are detected on some ranks but must stop all of them.
#pragma once

#include "core/error.hpp"
#include "mpi/comm.hpp"

#include <functional>

namespace phew::mpi {

// Runs `local` (which must not call collectives) on every rank. If it throws on any rank, every rank
// throws the same Error (the lowest failing rank's kind and message), marked agreed. Collective.
void agree(const Comm& comm, const std::function<void()>& local);

// The same for a condition found by each rank: throws the lowest failing rank's error on every rank
// when `error` is non-empty anywhere.
void agree_on(const Comm& comm, const Error* error);

}  // namespace phew::mpi

// Agreement on failure: a phase whose errors are detected on some ranks but must stop all of them.
#pragma once

#include <phew/core/error.hpp>
#include <phew/mpi/comm.hpp>

#include <functional>

namespace phew::mpi {

// Runs `local` (which must not call collectives) on every rank. If it throws on any rank, every rank
// throws the same Error (the lowest failing rank's kind and message), marked agreed. Collective.
void agree(const Comm& comm, const std::function<void()>& local);

// The same for a condition found by each rank: throws the lowest failing rank's error on every rank
// when `error` is non-empty anywhere.
void agree_on(const Comm& comm, const core::Error* error);

// The same for problems found per item (a field, a peak) on any rank: every rank throws the error of
// the item with the lowest `key` anywhere (ties: the lower rank), so the message does not depend on
// the decomposition. `error` null: nothing wrong here (key ignored). Collective.
void agree_first(const Comm& comm, std::int64_t key, const core::Error* error);

}  // namespace phew::mpi

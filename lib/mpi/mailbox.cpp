#include <phew/mpi/mailbox.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <thread>

namespace phew::mpi {

void nap() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

Mailbox::Mailbox(const Comm& comm) {
  local_ = !running();  // one rank without MPI: the messages stay in this process
  if (local_) return;
  count_collective();
  MPI_Comm_dup(comm.raw(), &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Mailbox::~Mailbox() {
  if (std::uncaught_exceptions() == 0) {
    flush();
  } else {
    // Unwinding (a rank failed): do not wait for receivers that may never come. The sends finish on
    // their own; their buffers must outlive them, so they are deliberately not freed.
    static auto* kept = new std::deque<std::vector<char>>();
    for (MPI_Request& r : requests_) MPI_Request_free(&r);
    for (auto& b : buffers_) kept->push_back(std::move(b));  // moving keeps each buffer's address
  }
  if (!local_) MPI_Comm_free(&comm_);
}

void Mailbox::send(int to, int tag, std::vector<char> bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw core::Error::input("a message of {} bytes is too large to send between ranks", bytes.size());
  if (local_) {
    if (to != 0) throw core::Error::internal("mailbox: a message to rank {} on one rank", to);
    inbox_.push_back({0, tag, std::move(bytes)});  // not traffic: no other rank
    return;
  }
  buffers_.push_back(std::move(bytes));
  requests_.emplace_back();
  count_message(buffers_.back().size());
  MPI_Isend(buffers_.back().data(), static_cast<int>(buffers_.back().size()), MPI_BYTE, to, tag, comm_,
            &requests_.back());
}

std::optional<Mailbox::Message> Mailbox::try_receive(int tag, int from) {
  if (local_) {
    const auto m = std::find_if(inbox_.begin(), inbox_.end(), [&](const Message& x) { return x.tag == tag; });
    if (m == inbox_.end()) return std::nullopt;
    Message out = std::move(*m);
    inbox_.erase(m);
    return out;
  }
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(from == any_source ? MPI_ANY_SOURCE : from, tag, comm_, &flag, &st);
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  Message m{st.MPI_SOURCE, st.MPI_TAG, std::vector<char>(static_cast<std::size_t>(count))};
  MPI_Recv(m.bytes.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, comm_, MPI_STATUS_IGNORE);
  return m;
}

Mailbox::Message Mailbox::receive(int tag, int from, const std::function<void()>& idle) {
  for (;;) {
    if (idle) idle();
    if (auto m = try_receive(tag, from)) return std::move(*m);
    nap();
  }
}

void Mailbox::done(const std::function<void()>& idle) {
  if (local_) {  // the only rank: everyone has called done()
    if (idle) idle();
    return;
  }
  MPI_Request barrier;
  count_collective();
  MPI_Ibarrier(comm_, &barrier);
  for (int finished = 0;;) {
    if (idle) idle();
    MPI_Test(&barrier, &finished, MPI_STATUS_IGNORE);
    if (finished) break;
    nap();
  }
}

void Mailbox::flush() {
  if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  requests_.clear();
  buffers_.clear();
}

}  // namespace phew::mpi

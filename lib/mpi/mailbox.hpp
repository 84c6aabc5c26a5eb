// Point-to-point messages for work that is shared while it runs (dtfe-surface's schedules: a sender
// ships batches of fields, idle ranks steal fields from busy ones): byte messages on a private
// duplicate of the communicator, sent without blocking, received when they have arrived, and a
// termination barrier that tells every rank when all of them are done.
//
//   mpi::Mailbox box(comm);                            // collective
//   box.send(victim, kRequest);                        // never blocks
//   const auto reply = box.receive(kReply, victim, serve);  // serve() answers others while waiting
//   box.done(serve);                                   // collective: until every rank is done
//
// Waiting ranks poll with short sleeps rather than block: OpenMPI's blocking calls spin, which on an
// oversubscribed node takes the core from the ranks that still compute.
#pragma once

#include <phew/mpi/comm.hpp>

#include <deque>
#include <functional>
#include <optional>
#include <vector>

namespace phew::mpi {

class Mailbox {
 public:
  static constexpr int any_source = -1;

  struct Message {
    int source = 0;
    int tag = 0;
    std::vector<char> bytes;
  };

  // Duplicates `comm`, so that these messages never meet anyone else's. Collective.
  explicit Mailbox(const Comm& comm);
  // Waits for this rank's sends (unless an exception is unwinding: then they are left to finish on
  // their own, their buffers kept) and frees the duplicate.
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sends `bytes` (possibly none) to rank `to` under `tag` without waiting; the buffer is kept until
  // the send has completed. Not collective. Throws Error(input) for a message of 2^31 bytes or more.
  void send(int to, int tag, std::vector<char> bytes = {});

  // The first message under `tag` from `from` (or any source) that has arrived, received; nullopt when
  // there is none yet. Messages from one source arrive in the order they were sent. Not collective.
  std::optional<Message> try_receive(int tag, int from = any_source);

  // Waits for a message under `tag` from `from` (or any source), calling `idle` (if any) before each
  // look and sleeping briefly between looks. Not collective.
  Message receive(int tag, int from = any_source, const std::function<void()>& idle = {});

  // The termination barrier: this rank will ask for nothing more. Keeps calling `idle` (answering
  // others' requests, say) until every rank has called done(). Collective.
  void done(const std::function<void()>& idle = {});

  // Waits until this rank's sends have completed and frees their buffers. Not collective.
  void flush();

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  // Without MPI (a tool started without a launcher: one rank) messages to itself wait here, in order.
  bool local_ = false;
  std::deque<Message> inbox_;
  std::deque<std::vector<char>> buffers_;  // stable addresses while their sends run
  std::vector<MPI_Request> requests_;
};

// A short sleep for ranks that poll (200 microseconds).
void nap();

}  // namespace phew::mpi

// mpi::Mailbox: messages in a ring (empty, small and large), from every rank to one (any source, in
// order per source), and work stealing until the termination barrier: every item is done exactly once
// whoever holds it. Registered at 1, 2, 3 and 4 ranks.
#include <phew/mpi/mailbox.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <numeric>

namespace phew::mpi {
namespace {

std::vector<char> bytes_of(std::uint64_t value, std::size_t size) {
  std::vector<char> b(size);
  for (std::size_t i = 0; i < size; ++i) b[i] = static_cast<char>((value * 131 + i * 7) & 0xff);
  return b;
}

TEST(Mailbox, ARingOfEmptySmallAndLargeMessages) {
  const Comm comm;
  Mailbox box(comm);
  EXPECT_EQ(box.rank(), comm.rank());
  EXPECT_EQ(box.size(), comm.size());
  const int next = (comm.rank() + 1) % comm.size(), prev = (comm.rank() + comm.size() - 1) % comm.size();
  const std::size_t sizes[] = {0, 1, 1000, std::size_t{8} << 20};  // the last one is past the eager limit
  for (std::size_t k = 0; k < std::size(sizes); ++k)
    box.send(next, 7, bytes_of(static_cast<std::uint64_t>(comm.rank()) * 10 + k, sizes[k]));
  for (std::size_t k = 0; k < std::size(sizes); ++k) {
    const Mailbox::Message m = box.receive(7, prev);
    EXPECT_EQ(m.source, prev);
    EXPECT_EQ(m.tag, 7);
    EXPECT_EQ(m.bytes, bytes_of(static_cast<std::uint64_t>(prev) * 10 + k, sizes[k])) << "message " << k;
  }
  box.flush();
  EXPECT_FALSE(box.try_receive(8).has_value());  // nobody sends under tag 8
  box.done();
}

TEST(Mailbox, AnySourceKeepsEachSourcesOrder) {
  const Comm comm;
  Mailbox box(comm);
  for (std::uint64_t seq = 0; seq < 5; ++seq) {
    std::vector<char> b(16);
    const std::uint64_t v[2] = {static_cast<std::uint64_t>(comm.rank()), seq};
    std::memcpy(b.data(), v, sizeof v);
    box.send(0, 3, std::move(b));
  }
  if (comm.root()) {
    std::map<int, std::uint64_t> next;
    for (int i = 0; i < 5 * comm.size(); ++i) {
      const Mailbox::Message m = box.receive(3);
      std::uint64_t v[2];
      ASSERT_EQ(m.bytes.size(), sizeof v);
      std::memcpy(v, m.bytes.data(), sizeof v);
      EXPECT_EQ(static_cast<int>(v[0]), m.source);
      EXPECT_EQ(v[1], next[m.source]++) << "from " << m.source;
    }
    EXPECT_EQ(next.size(), static_cast<std::size_t>(comm.size()));
  }
  box.done();
}

// The dynamic schedule's pattern: rank 0 holds most of the items; every rank works through its own,
// then asks the others in turn for one of theirs until each says it has none; requests are answered
// between items and, once a rank is done asking, until every rank is done.
TEST(Mailbox, WorkStealingDoesEveryItemOnceAndTerminates) {
  constexpr int kRequest = 1, kReply = 2;
  const Comm comm;
  std::deque<std::uint64_t> queue;
  const int mine = comm.root() ? 60 : comm.rank();
  for (int i = 0; i < mine; ++i)
    queue.push_back(static_cast<std::uint64_t>(comm.rank()) * 1000 + static_cast<std::uint64_t>(i));
  std::vector<std::uint64_t> done_here;
  Mailbox box(comm);
  auto serve = [&] {
    while (const auto request = box.try_receive(kRequest)) {
      std::vector<char> b;
      if (!queue.empty()) {
        b.resize(sizeof(std::uint64_t));
        std::memcpy(b.data(), &queue.front(), sizeof(std::uint64_t));
        queue.pop_front();
      }
      box.send(request->source, kReply, std::move(b));
    }
  };
  while (!queue.empty()) {
    serve();
    if (queue.empty()) break;
    done_here.push_back(queue.front());
    queue.pop_front();
  }
  for (int v = 0; v < comm.size(); ++v) {
    if (v == comm.rank()) continue;
    for (;;) {
      box.send(v, kRequest);
      const Mailbox::Message reply = box.receive(kReply, v, serve);
      if (reply.bytes.empty()) break;
      std::uint64_t item = 0;
      std::memcpy(&item, reply.bytes.data(), sizeof item);
      done_here.push_back(item);
    }
  }
  box.done(serve);
  box.flush();

  std::vector<std::uint64_t> all = comm.all_gatherv<std::uint64_t>(done_here);
  std::sort(all.begin(), all.end());
  std::vector<std::uint64_t> expected;
  for (int r = 0; r < comm.size(); ++r)
    for (int i = 0; i < (r == 0 ? 60 : r); ++i)
      expected.push_back(static_cast<std::uint64_t>(r) * 1000 + static_cast<std::uint64_t>(i));
  EXPECT_EQ(all, expected);
}

TEST(Mailbox, TwoMailboxesDoNotMeet) {
  const Comm comm;
  Mailbox a(comm), b(comm);
  a.send(comm.rank(), 5, bytes_of(1, 3));
  b.send(comm.rank(), 5, bytes_of(2, 4));
  EXPECT_EQ(b.receive(5, comm.rank()).bytes, bytes_of(2, 4));
  EXPECT_EQ(a.receive(5, comm.rank()).bytes, bytes_of(1, 3));
  a.done();
  b.done();
}

}  // namespace
}  // namespace phew::mpi

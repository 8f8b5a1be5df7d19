// The local run queue: see runq.hpp for the layout and invariants.
#include "scheduler/runq.hpp"

#include <unistd.h>

#include "scheduler/g.hpp"

namespace goro::detail {

void GQueue::push_back(G* g) {
  g->schedlink = nullptr;
  if (tail != nullptr) {
    tail->schedlink = g;
  } else {
    head = g;
  }
  tail = g;
  ++size;
}

void GQueue::push_front(G* g) {
  g->schedlink = head;
  head = g;
  if (tail == nullptr) tail = g;
  ++size;
}

void GQueue::append(GQueue& other) {
  if (other.empty()) return;
  if (tail != nullptr) {
    tail->schedlink = other.head;
  } else {
    head = other.head;
  }
  tail = other.tail;
  size += other.size;
  other = GQueue{};
}

GQueue GQueue::split_after(std::int64_t n) {
  GQueue rest;
  if (n >= size) return rest;
  if (n <= 0) {
    rest = *this;
    *this = GQueue{};
    return rest;
  }
  G* last = head;
  for (std::int64_t i = 1; i < n; ++i)
    last = last->schedlink;
  rest.head = last->schedlink;
  rest.tail = tail;
  rest.size = size - n;
  last->schedlink = nullptr;
  tail = last;
  size = n;
  return rest;
}

G* GQueue::pop_front() {
  G* g = head;
  if (g == nullptr) return nullptr;
  head = g->schedlink;
  if (head == nullptr) tail = nullptr;
  g->schedlink = nullptr;
  --size;
  return g;
}

void GFifo::grow() {
  const std::size_t cap = buf_.empty() ? 256 : buf_.size() * 2;
  std::vector<G*> bigger(cap);
  for (std::int64_t i = 0; i < n_; ++i)
    bigger[static_cast<std::size_t>(i)] =
        buf_[(head_ + static_cast<std::size_t>(i)) & (buf_.size() - 1)];
  buf_.swap(bigger);
  head_ = 0;
}

void GFifo::append(GQueue& q) {
  while (G* g = q.pop_front())
    push_back(g);
}

bool RunQueue::put_general(G* g, bool next, Spill* spill) {
  if (next) {
    // Reached when put()'s inline check saw runnext occupied. Only the owner
    // stores non-null, so the exchange cannot lose a G that a thief is about
    // to take: a thief's CAS to null on the old value either happened (we
    // get null back) or fails after our exchange.
    G* old = runnext_.exchange(g, std::memory_order_acq_rel);
    if (old == nullptr) return false;
    g = old;  // the displaced G goes to the tail
  }
  for (;;) {
    // acquire pairs with the thieves' release CAS of head: slots they freed
    // are no longer read by them once we see the new head.
    std::uint32_t h = head_.load(std::memory_order_acquire);
    std::uint32_t t = tail_.load(std::memory_order_relaxed);  // only we write it
    if (t - h < kSize) {
      slot(t).store(g, std::memory_order_relaxed);
      tail_.store(t + 1, std::memory_order_release);  // publish the slot (pairs with thieves)
      return false;
    }
    if (put_slow(g, h, t, spill)) return true;
    // A thief took some Gs meanwhile: there is room now.
  }
}

bool RunQueue::put_slow(G* g, std::uint32_t h, std::uint32_t t, Spill* spill) {
  constexpr std::uint32_t n = kSize / 2;
  GORO_CHECK(t - h == kSize, "runq: put_slow on a queue that is not full");
  (void)t;
  G* batch[n];
  for (std::uint32_t i = 0; i < n; ++i) {
    batch[i] = slot(h + i).load(std::memory_order_relaxed);
  }
  // Claim the oldest half; on failure a thief got there first.
  if (!head_.compare_exchange_strong(h, h + n, std::memory_order_release,
                                     std::memory_order_relaxed)) {
    return false;
  }
  for (std::uint32_t i = 0; i < n; ++i)
    spill->g[i] = batch[i];
  spill->g[n] = g;
  spill->n = n + 1;
  return true;
}

void RunQueue::put_batch(GQueue& q) {
  std::uint32_t h = head_.load(std::memory_order_acquire);
  std::uint32_t t = tail_.load(std::memory_order_relaxed);
  std::uint32_t n = 0;
  while (!q.empty() && (t + n) - h < kSize) {
    slot(t + n).store(q.pop_front(), std::memory_order_relaxed);
    ++n;
  }
  if (n != 0) tail_.store(t + n, std::memory_order_release);
}

std::uint32_t RunQueue::put_array(G* const* gs, std::uint32_t n) {
  std::uint32_t h = head_.load(std::memory_order_acquire);
  std::uint32_t t = tail_.load(std::memory_order_relaxed);
  const std::uint32_t room = kSize - (t - h);
  if (n > room) n = room;
  for (std::uint32_t i = 0; i < n; ++i)
    slot(t + i).store(gs[i], std::memory_order_relaxed);
  if (n != 0) tail_.store(t + n, std::memory_order_release);
  return n;
}

std::uint32_t RunQueue::grab(RunQueue& victim, std::uint32_t dst_tail, bool steal_runnext,
                             bool victim_running) {
  for (;;) {
    std::uint32_t h = victim.head_.load(std::memory_order_acquire);
    std::uint32_t t = victim.tail_.load(std::memory_order_acquire);  // pairs with owner's release
    std::uint32_t n = t - h;
    n = n - n / 2;  // the larger half: 1 -> 1, 3 -> 2, 256 -> 128
    if (n == 0) {
      if (!steal_runnext) return 0;
      G* next = victim.runnext_.load(std::memory_order_acquire);
      if (next == nullptr) return 0;
      if (victim_running) {
        // The running G probably just readied `next` and is about to block;
        // stealing now would bounce it between Ps. A channel operation takes
        // ~50 ns, so 3 µs is a generous grace (Go's runqgrab).
        usleep(3);
      }
      if (!victim.runnext_.compare_exchange_strong(next, nullptr, std::memory_order_acq_rel)) {
        continue;
      }
      slot(dst_tail).store(next, std::memory_order_relaxed);
      return 1;
    }
    if (n > kSize / 2) continue;  // h and t were read inconsistently
    for (std::uint32_t i = 0; i < n; ++i) {
      G* g = victim.slot(h + i).load(std::memory_order_relaxed);
      slot(dst_tail + i).store(g, std::memory_order_relaxed);
    }
    // The CAS decides: on success the n slots we copied were ours.
    if (victim.head_.compare_exchange_strong(h, h + n, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
      return n;
    }
  }
}

G* RunQueue::steal_from(RunQueue& victim, bool steal_runnext, bool victim_running) {
  std::uint32_t t = tail_.load(std::memory_order_relaxed);
  std::uint32_t n = grab(victim, t, steal_runnext, victim_running);
  if (n == 0) return nullptr;
  --n;
  G* g = slot(t + n).load(std::memory_order_relaxed);
  if (n == 0) return g;
  GORO_CHECK(t - head_.load(std::memory_order_acquire) + n < kSize, "runq: steal overflow");
  tail_.store(t + n, std::memory_order_release);
  return g;
}

void RunQueue::drain_to(GQueue& q) {
  bool inherit;
  while (G* g = get(&inherit))
    q.push_back(g);
}

bool RunQueue::empty() const {
  // Go's runqempty: re-read tail so a G moving from runnext to the ring in the
  // middle of the check is not missed.
  for (;;) {
    std::uint32_t h = head_.load(std::memory_order_acquire);
    std::uint32_t t = tail_.load(std::memory_order_acquire);
    G* next = runnext_.load(std::memory_order_acquire);
    if (tail_.load(std::memory_order_acquire) == t) return h == t && next == nullptr;
  }
}

std::uint32_t RunQueue::size() const {
  return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
}

}  // namespace goro::detail

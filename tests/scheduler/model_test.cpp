// Exhaustive interleaving models of three scheduler protocols (interleave.hpp):
//   - live retirement (procresize.cpp): an owner M that saw retire_requested
//     without sched.lock, against a resizer that shrinks and grows;
//   - the local run queue (runq.hpp): the owner's put/get against thieves,
//     with a 4-slot ring and runnext (Tokio checks its queue with 4 slots too);
//   - the spinning/wakep handshake (findrunnable.cpp essay): a goroutine
//     readying work and calling wakep, against an M giving up its P, with and
//     without thread creation failing.
// Each model mirrors the runtime's code step by step (the comments name the
// function); when that code changes, change the model with it.
//
// Each protocol runs twice: as the runtime does it now (no counterexample
// may exist) and as it was before a fix (the checker must find the bug, and
// the test prints the interleaving it found). So the old variants are the
// proof that the checker catches those bugs: to see issue 16 item 1 found,
// run --gtest_filter='Model.RetireWithoutRecheckLosesALiveP' (it asserts the
// counterexample and prints it); to check a change to the runtime, change
// the "now" model the same way and run the suite.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "tests/scheduler/interleave.hpp"

namespace {

using goro::test::interleave::explore;
using goro::test::interleave::Result;
using u8 = std::uint8_t;

// ---------------------------------------------------------------------------
// Live retirement (issue 16 item 1).
// Thread 0: the M owning P1, at its scheduling points (find_runnable): reads
//   retire_requested without the lock and, if set, calls retire_owned_p.
// Thread 1: the resizer: shrink to 1, grow to 2, twice (resize_procs).

enum : u8 { kIdle = 0, kRunning = 1, kDead = 4 };

struct RetireModel {
  bool recheck_under_lock;  // the fix: retire_owned_p looks again under the lock
  static constexpr int kThreads = 2;
  static constexpr u8 kOwnerDone = 9;
  static constexpr u8 kRounds = 3;  // scheduling points the owner passes
  struct State {
    u8 maxprocs = 2;
    u8 p1 = kRunning;
    u8 p1_listed = 0;  // on the idle list
    u8 retire_requested = 0;
    u8 owner_has_p = 1;
    u8 owner_pc = 0;
    u8 owner_rounds = 0;
    u8 resizer_pc = 0;  // even: shrink next, odd: grow next, 4: done
  };
  bool enabled(const State& s, int t) const {
    return t == 0 ? s.owner_pc != kOwnerDone : s.resizer_pc < 4;
  }
  const char* step(State& s, int t) const {
    if (t == 1) return resize(s);
    if (s.owner_pc == 0) {  // find_runnable: p->retire_requested.load()
      if (s.retire_requested) {
        s.owner_pc = 1;
        return "owner: reads retire_requested == 1 (no lock)";
      }
      next_round(s);
      return "owner: reads retire_requested == 0 (no lock), schedules";
    }
    // retire_owned_p, one sched.lock critical section.
    if (!recheck_under_lock || s.retire_requested) {
      s.p1 = kDead;
      s.retire_requested = 0;
      s.owner_has_p = 0;
      s.owner_pc = kOwnerDone;
      return "owner: locks, retires P1 (retire_locked)";
    }
    next_round(s);
    return "owner: locks, request gone: keeps P1";
  }
  void next_round(State& s) const { s.owner_pc = ++s.owner_rounds < kRounds ? 0 : kOwnerDone; }
  const char* resize(State& s) const {
    const bool shrink = s.resizer_pc % 2 == 0;
    ++s.resizer_pc;
    if (shrink) {  // resize_procs(1), under sched.lock
      s.maxprocs = 1;
      if (s.p1 == kIdle && s.p1_listed) {
        s.p1_listed = 0;
        s.p1 = kDead;
        return "resizer: shrink to 1, retires idle P1";
      }
      if (s.p1 != kDead) s.retire_requested = 1;
      return "resizer: shrink to 1, asks P1's owner to retire it";
    }
    s.maxprocs = 2;  // resize_procs(2), under sched.lock
    if (s.p1 != kDead) {
      s.retire_requested = 0;
      return "resizer: grow to 2, cancels P1's retirement";
    }
    s.p1 = kIdle;
    s.p1_listed = 1;
    return "resizer: grow to 2, revives P1 (idle list)";
  }
  const char* check(const State& s) const {
    if (s.owner_has_p && s.p1 == kDead) return "P1 retired under its owner";
    if (s.retire_requested && s.maxprocs > 1) return "retire_requested on a P below maxprocs";
    return nullptr;
  }
  const char* check_final(const State& s) const {
    if (s.p1 == kDead && s.maxprocs == 2) return "P1 is below maxprocs but dead (capacity lost)";
    return nullptr;
  }
};

TEST(Model, RetireRechecksUnderTheLock) {
  const Result r = explore(RetireModel{.recheck_under_lock = true}, {});
  EXPECT_FALSE(r.violated) << r.describe();
  EXPECT_GT(r.states, 10u);
}

// The code before issue 16 item 1's fix: the checker must find the bug.
TEST(Model, RetireWithoutRecheckLosesALiveP) {
  const Result r = explore(RetireModel{.recheck_under_lock = false}, {});
  ASSERT_TRUE(r.violated) << "the checker no longer finds issue 16 item 1 in the old code";
  EXPECT_EQ(r.what, "P1 is below maxprocs but dead (capacity lost)");
  std::printf("counterexample (expected): %s", r.describe().c_str());
}

// ---------------------------------------------------------------------------
// The local run queue (runq.hpp, runq.cpp) with kSize = 4, so that the ring
// fills and put_slow spills to the global queue. Thread 0 is the owner
// running a program of puts and gets, the others are thieves calling
// steal_from(victim, steal_runnext = true). Every goroutine put must be taken
// exactly once: by the owner's get, by a thief, or by a spill.

struct RunqModel {
  enum Op : u8 { kPut, kPutNext, kGet, kDrain, kEnd };
  static constexpr int kSize = 4;
  static constexpr int kMaxThieves = 2;
  static constexpr int kMaxG = 8;
  static constexpr int kThreads = 1 + kMaxThieves;
  Op program[10];                  // the owner's, kEnd-terminated; goroutines numbered 1, 2, ...
  int thieves;                     // 1 or 2
  int steals;                      // attempts per thief
  bool plain_get_runnext = false;  // mutant: owner's get takes runnext without a CAS

  struct Thief {
    u8 pc = 0, done = 0, h = 0, n = 0, i = 0, next = 0;
    u8 buf[kSize / 2] = {};
  };
  struct State {
    u8 head = 0, tail = 0, runnext = 0;
    u8 slot[kSize] = {};
    u8 taken[kMaxG + 1] = {};
    u8 op = 0, pc = 0, g = 0, h = 0, next_g = 1, b0 = 0, b1 = 0, got = 0;
    Thief thief[kMaxThieves];
  };

  bool enabled(const State& s, int t) const {
    if (t == 0) return program[s.op] != kEnd;
    return t <= thieves && s.thief[t - 1].done < steals;
  }
  const char* step(State& s, int t) const { return t == 0 ? owner(s) : thief(s, s.thief[t - 1]); }

  // pcs of the owner's ring put (put_general's loop, put_slow), shared by
  // kPut and the displaced runnext of kPutNext.
  enum : u8 { kRingHead = 10, kRingSlot, kRingTail, kSlow0, kSlow1, kSlowCas };
  enum : u8 { kGetNext = 20, kGetCas, kGetHead, kGetSlot, kGetHeadCas };

  void op_done(State& s) const {
    ++s.op;
    s.pc = 0;
  }
  const char* owner(State& s) const {
    const Op op = program[s.op];
    switch (s.pc) {
      case 0:
        if (op == kPut) {
          s.g = s.next_g++;
          s.pc = kRingHead;
          return owner(s);  // the label of the first real step
        }
        if (op == kPutNext) {  // try_put: runnext empty? (only we make it non-null)
          s.g = s.next_g++;
          if (s.runnext == 0) {
            s.pc = 1;
            return "owner put_next: loads runnext == null";
          }
          s.pc = 2;
          return "owner put_next: loads runnext != null";
        }
        s.pc = kGetNext;
        return owner(s);
      case 1:
        s.runnext = s.g;
        op_done(s);
        return "owner put_next: stores runnext";
      case 2: {  // put_general: exchange
        const u8 old = s.runnext;
        s.runnext = s.g;
        if (old == 0) {
          op_done(s);
          return "owner put_next: exchanges runnext (it was taken meanwhile)";
        }
        s.g = old;
        s.pc = kRingHead;
        return "owner put_next: exchanges runnext, puts the old one on the ring";
      }
      case kRingHead:
        s.h = s.head;
        s.pc = static_cast<u8>(s.tail - s.h) < kSize ? kRingSlot : kSlow0;
        return "owner put: loads head";
      case kRingSlot:
        s.slot[s.tail % kSize] = s.g;
        s.pc = kRingTail;
        return "owner put: stores the slot";
      case kRingTail:
        ++s.tail;
        op_done(s);
        return "owner put: stores tail (publish)";
      case kSlow0:
        s.b0 = s.slot[s.h % kSize];
        s.pc = kSlow1;
        return "owner put_slow: loads slot h";
      case kSlow1:
        s.b1 = s.slot[(s.h + 1) % kSize];
        s.pc = kSlowCas;
        return "owner put_slow: loads slot h+1";
      case kSlowCas:
        if (s.head != s.h) {
          s.pc = kRingHead;
          return "owner put_slow: CAS head fails (a thief took some), retries";
        }
        s.head = static_cast<u8>(s.h + kSize / 2);
        ++s.taken[s.b0];
        ++s.taken[s.b1];
        ++s.taken[s.g];
        op_done(s);
        return "owner put_slow: CAS head, spills half and g to the global queue";
      case kGetNext:
        s.got = s.runnext;
        if (s.got == 0) {
          s.pc = kGetHead;
          return "owner get: loads runnext == null";
        }
        s.pc = kGetCas;
        return "owner get: loads runnext != null";
      case kGetCas:
        if (plain_get_runnext || s.runnext == s.got) {
          s.runnext = 0;
          ++s.taken[s.got];
          return got_one(s, "owner get: takes runnext (CAS)");
        }
        s.pc = kGetHead;
        return "owner get: CAS runnext fails (a thief took it)";
      case kGetHead:
        s.h = s.head;
        if (s.h == s.tail) {
          op_done(s);  // empty: a get returns nothing, a drain ends
          return "owner get: loads head == tail (empty)";
        }
        s.pc = kGetSlot;
        return "owner get: loads head";
      case kGetSlot:
        s.got = s.slot[s.h % kSize];
        s.pc = kGetHeadCas;
        return "owner get: loads slot h";
      case kGetHeadCas:
        if (s.head != s.h) {
          s.pc = kGetHead;
          return "owner get: CAS head fails, retries";
        }
        s.head = static_cast<u8>(s.h + 1);
        ++s.taken[s.got];
        return got_one(s, "owner get: CAS head, takes slot h");
    }
    return "owner: bad pc";
  }
  const char* got_one(State& s, const char* label) const {
    if (program[s.op] == kDrain) {
      s.pc = kGetNext;  // drain_to: get until empty
    } else {
      op_done(s);
    }
    return label;
  }

  // grab() + steal_from(); the stolen Gs count as taken when the CAS wins.
  const char* thief(State& s, Thief& th) const {
    switch (th.pc) {
      case 0:
        th.h = s.head;
        th.pc = 1;
        return "thief: loads head";
      case 1: {
        u8 n = static_cast<u8>(s.tail - th.h);
        n = static_cast<u8>(n - n / 2);
        if (n == 0) {
          th.pc = 3;
          return "thief: loads tail (ring empty)";
        }
        if (n > kSize / 2) {
          th.pc = 0;
          return "thief: loads tail (inconsistent with head), retries";
        }
        th.n = n;
        th.i = 0;
        th.pc = 2;
        return "thief: loads tail";
      }
      case 2:
        th.buf[th.i] = s.slot[(th.h + th.i) % kSize];
        if (++th.i == th.n) th.pc = 5;
        return "thief: loads a victim slot";
      case 3:
        th.next = s.runnext;
        if (th.next == 0) return finish(th, "thief: loads runnext == null, gives up");
        th.pc = 4;
        return "thief: loads runnext";
      case 4:
        if (s.runnext != th.next) {
          th.pc = 0;
          return "thief: CAS runnext fails, retries";
        }
        s.runnext = 0;
        ++s.taken[th.next];
        return finish(th, "thief: CAS runnext, takes it");
      case 5:
        if (s.head != th.h) {
          th.pc = 0;
          return "thief: CAS head fails, retries";
        }
        s.head = static_cast<u8>(th.h + th.n);
        for (int i = 0; i < th.n; ++i)
          ++s.taken[th.buf[i]];
        return finish(th, "thief: CAS head, takes the copied slots");
    }
    return "thief: bad pc";
  }
  const char* finish(Thief& th, const char* label) const {
    const u8 done = th.done + 1;
    th = Thief{};
    th.done = done;
    return label;
  }

  const char* check(const State& s) const {
    for (int g = 1; g <= kMaxG; ++g) {
      if (s.taken[g] > 1) return "a goroutine was taken twice";
    }
    if (s.taken[0] != 0) return "a null goroutine was taken";
    return nullptr;
  }
  const char* check_final(const State& s) const {
    for (int g = 1; g < s.next_g; ++g) {
      if (s.taken[g] != 1) return "a goroutine was lost";
    }
    return nullptr;
  }
};

using Op = RunqModel::Op;

// Fills the ring (put_slow spills), displaces runnext, drains; one thief
// stealing twice.
TEST(Model, RunQueueOwnerAgainstOneThief) {
  const RunqModel m{.program = {Op::kPut, Op::kPutNext, Op::kPutNext, Op::kPut, Op::kPut, Op::kPut,
                                Op::kGet, Op::kDrain, Op::kEnd},
                    .thieves = 1,
                    .steals = 2};
  const Result r = explore(m, {});
  EXPECT_FALSE(r.violated) << r.describe();
  std::printf("%zu states\n", r.states);
}

TEST(Model, RunQueueOwnerAgainstTwoThieves) {
  const RunqModel m{
      .program = {Op::kPut, Op::kPutNext, Op::kPut, Op::kPutNext, Op::kGet, Op::kDrain, Op::kEnd},
      .thieves = 2,
      .steals = 1};
  const Result r = explore(m, {});
  EXPECT_FALSE(r.violated) << r.describe();
  std::printf("%zu states\n", r.states);
}

// A mutant the checker must catch: the owner takes runnext with a load and
// a store instead of a CAS, racing a thief's CAS.
TEST(Model, RunQueueMutantWithoutRunnextCasIsCaught) {
  const RunqModel m{.program = {Op::kPutNext, Op::kGet, Op::kEnd},
                    .thieves = 1,
                    .steals = 1,
                    .plain_get_runnext = true};
  const Result r = explore(m, {});
  ASSERT_TRUE(r.violated);
  EXPECT_EQ(r.what, "a goroutine was taken twice");
}

// ---------------------------------------------------------------------------
// The spinning/wakep handshake (issue 16 item 4).
// Thread 0, S: a goroutine on P0 readies W onto P0's local queue (ready ->
//   runq_put) and calls wakep(); then it runs on for a long time, so W runs
//   only if another M takes it.
// Thread 1, R: an M on P1 that found no work: release_and_block (spinning
//   or not), then stopm; woken by startm it spins and steals W.
// Property, wherever nobody can step: if W is still queued, an idle P and an
// idle (sleeping) M exist, and nobody spins, the wake-up was lost: W waits
// behind S's goroutine although a P and a thread are free.
// Every sched.lock critical section is one step.

struct HandshakeModel {
  bool old_wakep_shortcut;    // wakep read npidle == 0 and set needspinning unlocked
  bool old_newm_failure;      // newm's failure path undid nmspinning without a recheck
  bool newm_fails;            // thread creation fails (Options::max_threads reached)
  bool r_spinning;            // R starts as a spinner
  bool old_stopm = false;     // stopm slept without looking at needspinning
  bool flag_precheck = true;  // wakep returns at once when needspinning is already set
  static constexpr int kThreads = 2;
  static constexpr u8 kDone = 99;
  struct State {
    u8 w = 0;      // Gs on P0's local queue
    u8 pidle = 0;  // idle list, bit i = P i
    u8 needspinning = 0;
    u8 nmspinning = 0;
    u8 s_pc = 0;
    u8 s_p = 0;  // the P wakep took for startm
    u8 r_pc = 0;
    u8 r_spinning = 0;
    u8 r_asleep = 0;     // R is on the idle M list, sleeping
    u8 r_found = 0;      // R took W (running: it will look again)
    u8 new_spinner = 0;  // newm started a thread that spins
  };

  bool enabled(const State& s, int t) const {
    return t == 0 ? s.s_pc != kDone : (s.r_pc != kDone && !s.r_asleep);
  }
  const char* step(State& s, int t) const { return t == 0 ? submitter(s) : releaser(s); }

  static u8 take_lowest(u8& mask) {
    const u8 p = static_cast<u8>(std::countr_zero(static_cast<unsigned>(mask)));
    mask = static_cast<u8>(mask & (mask - 1));
    return p;
  }
  void wake_r_spinning(State& s, u8 p) const {
    (void)p;  // R now holds p
    s.r_asleep = 0;
    s.r_spinning = 1;
    s.r_pc = 10;  // spin
  }

  const char* submitter(State& s) const {
    switch (s.s_pc) {
      case 0:
        ++s.w;
        s.s_pc = 1;
        return "S: ready W onto P0's queue";
      case 1:  // wakep: storeload_fence; nmspinning != 0?
        if (s.nmspinning != 0) {
          s.s_pc = kDone;
          return "S wakep: loads nmspinning != 0, returns";
        }
        s.s_pc = old_wakep_shortcut ? 2 : (flag_precheck ? 20 : 4);
        return "S wakep: loads nmspinning == 0";
      case 20:  // needspinning already set by an earlier wakep: its taker spins
        if (s.needspinning) {
          s.s_pc = kDone;
          return "S wakep: loads needspinning == 1, returns";
        }
        s.s_pc = 4;
        return "S wakep: loads needspinning == 0";
      case 2:  // old: npidle == 0?
        if (s.pidle == 0) {
          s.s_pc = 3;
          return "S wakep (old): loads npidle == 0";
        }
        s.s_pc = 4;
        return "S wakep (old): loads npidle != 0";
      case 3:
        s.needspinning = 1;
        s.s_pc = kDone;
        return "S wakep (old): stores needspinning = 1 without the lock";
      case 4:
        if (s.nmspinning != 0) {
          s.s_pc = kDone;
          return "S wakep: CAS nmspinning 0 -> 1 fails";
        }
        s.nmspinning = 1;
        s.s_pc = 5;
        return "S wakep: CAS nmspinning 0 -> 1";
      case 5:  // lock; pidleget_spinning_locked
        if (s.pidle == 0) {
          s.needspinning = 1;
          --s.nmspinning;
          s.s_pc = kDone;
          return "S wakep: locks, no idle P: needspinning = 1, nmspinning -= 1";
        }
        s.s_p = take_lowest(s.pidle);
        s.s_pc = 6;
        return "S wakep: locks, takes an idle P";
      case 6:  // startm: lock; an idle M?
        if (s.r_asleep) {
          wake_r_spinning(s, s.s_p);
          s.s_pc = kDone;
          return "S startm: locks, takes idle M R, wakes it to spin";
        }
        if (!newm_fails) {
          s.new_spinner = 1;
          s.s_pc = kDone;
          return "S startm: no idle M, newm starts a spinning thread";
        }
        s.s_pc = 7;
        return "S startm: no idle M, newm fails";
      case 7:  // startm_failed: lock; pidleput_locked
        s.pidle = static_cast<u8>(s.pidle | (1u << s.s_p));
        s.s_pc = 8;
        return "S newm failed: locks, gives the P back";
      case 8:  // nmspinning -= 1 (seq_cst) + storeload_fence
        --s.nmspinning;
        s.s_pc = old_newm_failure ? kDone : 9;
        return "S newm failed: nmspinning -= 1";
      case 9:  // recheck the queues
        s.s_pc = s.w != 0 ? 10 : kDone;
        return s.w != 0 ? "S newm failed: recheck finds work" : "S newm failed: recheck finds none";
      case 10:  // lock; an idle M and an idle P?
        if (s.r_asleep && s.pidle != 0) {
          const u8 p = take_lowest(s.pidle);
          ++s.nmspinning;
          wake_r_spinning(s, p);
          s.s_pc = kDone;
          return "S newm failed: locks, wakes idle M R with an idle P to spin";
        }
        s.needspinning = 1;
        s.s_pc = kDone;
        return "S newm failed: locks, no idle M: needspinning = 1";
    }
    return "S: bad pc";
  }

  const char* releaser(State& s) const {
    switch (s.r_pc) {
      case 0:  // release_and_block: lock; global queue empty in this model
        if (!s.r_spinning && s.needspinning) {
          s.needspinning = 0;
          ++s.nmspinning;
          s.r_spinning = 1;
          s.r_pc = 10;
          return "R release_and_block: locks, needspinning: spins instead";
        }
        s.pidle = static_cast<u8>(s.pidle | 2u);
        s.r_pc = s.r_spinning ? 1 : 4;
        return "R release_and_block: locks, puts P1 on the idle list";
      case 1:  // the spinner's half: nmspinning -= 1; fence
        s.r_spinning = 0;
        --s.nmspinning;
        s.r_pc = 2;
        return "R: drops spinning, nmspinning -= 1";
      case 2:  // recheck every queue
        s.r_pc = s.w != 0 ? 3 : 4;
        return s.w != 0 ? "R: recheck finds work" : "R: recheck finds none";
      case 3:  // lock; pidleget_spinning_locked
        if (s.pidle != 0) {
          take_lowest(s.pidle);
          ++s.nmspinning;
          s.needspinning = 0;
          s.r_spinning = 1;
          s.r_pc = 10;
          return "R: locks, takes an idle P, spins";
        }
        s.needspinning = 1;
        s.r_pc = 4;
        return "R: locks, no idle P: needspinning = 1";
      case 4:  // stopm: lock; needspinning with an idle P: spin; else sleep
        if (!old_stopm && s.needspinning && s.pidle != 0) {
          take_lowest(s.pidle);
          s.needspinning = 0;
          ++s.nmspinning;
          s.r_spinning = 1;
          s.r_pc = 10;
          return "R stopm: locks, needspinning: takes an idle P and spins";
        }
        s.r_asleep = 1;
        s.r_pc = 11;
        return "R stopm: locks, joins the idle Ms, sleeps";
      case 10:  // spinning with a P: steal W
        if (s.w != 0) {
          --s.w;
          s.r_found = 1;
          --s.nmspinning;
          s.r_spinning = 0;
          s.r_pc = kDone;
          return "R: spins, steals W";
        }
        s.r_pc = 0;
        return "R: spins, finds nothing";
    }
    return "R: bad pc";
  }

  const char* check(const State&) const { return nullptr; }
  const char* check_final(const State& s) const {
    const bool someone_looks = s.r_found || s.new_spinner || s.nmspinning != 0;
    if (s.w != 0 && s.pidle != 0 && s.r_asleep && !someone_looks)
      return "lost wake-up: W queued, a P idle, an M asleep, nobody spinning";
    return nullptr;
  }
};

// R holds P1; no other P is idle.
HandshakeModel::State all_busy() {
  return {};
}
// P2 is idle too, and no thread can be created for it.
HandshakeModel::State one_idle_p() {
  HandshakeModel::State s{};
  s.pidle = 4;
  return s;
}

// Also with needspinning already set by an earlier wakep that found no idle
// P (the flag pre-check returns at once then).
HandshakeModel::State flagged(HandshakeModel::State s) {
  s.needspinning = 1;
  return s;
}

TEST(Model, WakepDecidesUnderTheLock) {
  for (bool r_spinning : {false, true}) {
    for (bool newm_fails : {false, true}) {
      const HandshakeModel m{.old_wakep_shortcut = false,
                             .old_newm_failure = false,
                             .newm_fails = newm_fails,
                             .r_spinning = r_spinning};
      for (HandshakeModel::State init :
           {all_busy(), one_idle_p(), flagged(all_busy()), flagged(one_idle_p())}) {
        init.r_spinning = r_spinning;
        init.nmspinning = r_spinning;
        const Result r = explore(m, init);
        EXPECT_FALSE(r.violated) << "newm_fails=" << newm_fails << " r_spinning=" << r_spinning
                                 << ": " << r.describe();
      }
    }
  }
}

// Before issue 16 item 4: wakep's unlocked "no idle P" shortcut.
TEST(Model, OldWakepShortcutLosesAWakeup) {
  const HandshakeModel m{.old_wakep_shortcut = true,
                         .old_newm_failure = false,
                         .newm_fails = false,
                         .r_spinning = false};
  const Result r = explore(m, all_busy());
  ASSERT_TRUE(r.violated) << "the checker no longer finds the old wakep race";
  std::printf("counterexample (expected): %s", r.describe().c_str());
}

// Before issue 16 item 4: newm's failure path without the recheck.
TEST(Model, OldNewmFailureLosesAWakeup) {
  const HandshakeModel m{.old_wakep_shortcut = false,
                         .old_newm_failure = true,
                         .newm_fails = true,
                         .r_spinning = false};
  const Result r = explore(m, one_idle_p());
  ASSERT_TRUE(r.violated) << "the checker no longer finds the old newm failure race";
  std::printf("counterexample (expected): %s", r.describe().c_str());
}

// Without stopm's look at needspinning, newm's failure path has nobody to
// tell: R idled its P before the flag was set and sleeps after.
TEST(Model, StopmWithoutNeedspinningLosesAWakeup) {
  const HandshakeModel m{.old_wakep_shortcut = false,
                         .old_newm_failure = false,
                         .newm_fails = true,
                         .r_spinning = false,
                         .old_stopm = true};
  const Result r = explore(m, one_idle_p());
  ASSERT_TRUE(r.violated) << "the checker no longer finds the stopm gap";
  std::printf("counterexample (expected): %s", r.describe().c_str());
}

}  // namespace

// Deadlock detection hooks (checkdead.cpp). Internal to the runtime.
#pragma once

#include <cstdio>

namespace goro::detail {

// Called with sched.lock held by an M that has just put itself on the idle
// M list (stopm), in the same critical section: exits the process with
// status 2 and a goroutine dump if every goroutine is parked on a sync
// primitive and nothing can ever wake one.
void check_dead_locked();

// Records that a sync operation came from a thread outside the runtime; from
// then on check_dead_locked never reports (such a thread could wake a goroutine at
// any time without the runtime knowing).
void note_foreign_sync() noexcept;

// One line per live goroutine: id, state or wait reason, where it was spawned.
void dump_goroutines(std::FILE* out);

// Prints header, the goroutine dump and "exit status 2" to stderr and exits
// with status 2 (Go's fatal error and SIGQUIT endings).
[[noreturn]] void exit_with_goroutine_dump(const char* header);

}  // namespace goro::detail

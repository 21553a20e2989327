#pragma once
// Work the cache runs on detached threads (prefetch()'s read-ahead), counted so that fork()
// never copies a lock one of them holds into the child. SQLite guards its allocator with a
// process-wide mutex: a child forked while such a thread was inside SQLite deadlocked on its
// first SQLite call (CI, under ThreadSanitizer). A pthread_atfork handler waits, at most
// kForkWaitLimit, for running work to finish before any fork() of the process proceeds.

#include <chrono>
#include <functional>

namespace cujit::detail {

/// How long a fork() waits at most for running background work (a thread stuck on a slow
/// server must not hang the forking program; after the limit the fork goes ahead as before).
inline constexpr std::chrono::seconds kForkWaitLimit{5};

/// Runs `work` on a new detached thread that fork() waits for. `work` must not throw (an
/// escaping exception ends the process, as from any thread) and must own what it touches.
/// Thread-safe.
void run_in_background(std::function<void()> work);

/// Waits until no background work runs, or `limit` passes; true when none runs. What the
/// fork handler calls; tests call it too.
bool wait_for_background_work(std::chrono::milliseconds limit);

}  // namespace cujit::detail

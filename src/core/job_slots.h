// A budget of concurrent jobs, as `make -j N` and ninja keep one: `check
// -j N` runs smokes and their independent child runs at once while they
// fit. A multi-rank smoke takes one slot per rank. Callers that only use
// spare capacity try_acquire() and otherwise do the work themselves,
// in order, so nested users never wait on each other.
//
//   JobSlots slots(2);
//   SlotHold smoke(slots, /*n=*/1);                 // blocks until a slot is free
//   if (slots.try_acquire(1)) { /* a second job at once */ slots.release(1); }
//   run_tasks(tasks, &slots);                       // task 0 here, others in threads while slots are free
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace lockstep {

/// A counting semaphore of job slots. Thread-safe.
class JobSlots {
 public:
  /// `capacity` slots; below 1 means 1.
  explicit JobSlots(int capacity);
  int capacity() const { return capacity_; }
  /// Takes `n` slots (clamped to 1..capacity), waiting until they are free.
  /// Returns the number taken, to be given back with release().
  int acquire(int n);
  /// Takes `n` slots (clamped to 1..capacity) if they are free now.
  bool try_acquire(int n);
  /// Gives back `n` slots taken before.
  void release(int n);
  /// Waits until `n` slots (clamped) are free and takes them (true), or
  /// until `give_up()` is true (false, nothing taken). `give_up` is read
  /// under the lock each time slots are released or notify() is called.
  bool acquire_unless(int n, const std::function<bool()>& give_up);
  /// Wakes every acquire_unless() to read its give_up again.
  void notify();

 private:
  int clamp(int n) const { return n < 1 ? 1 : n > capacity_ ? capacity_ : n; }
  const int capacity_;
  int free_;
  std::mutex mu_;
  std::condition_variable freed_;
};

/// Slots held for a scope.
class SlotHold {
 public:
  SlotHold(JobSlots& slots, int n) : slots_(slots), n_(slots.acquire(n)) {}
  ~SlotHold() { slots_.release(n_); }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  JobSlots& slots_;
  int n_;
};

/// Slots a thread holds, given back for a scope in which it only waits (for
/// its helpers): another job may use them meanwhile. Taken again, waiting
/// until they are free, when the scope ends. Null `slots` or `n` 0: nothing.
///
///   { SlotLoan idle(slots, 1); helper.join(); }
class SlotLoan {
 public:
  SlotLoan(JobSlots* slots, int n);
  ~SlotLoan();
  SlotLoan(const SlotLoan&) = delete;
  SlotLoan& operator=(const SlotLoan&) = delete;

 private:
  JobSlots* slots_;
  int n_;
};

/// The CPUs this process may run on (its affinity mask: a CI job's cgroup
/// or `taskset`), at least 1: the default of `check -j` and `calibrate -j`.
int available_cpus();

/// Runs every task and returns when all have ended. This thread (which
/// holds a slot of its own, or none is needed) runs them in order; each
/// task after the first also waits, in a helper thread, for
/// `slots_per_task` slots of `slots` (may be null: none) to come free, and
/// runs there if they do before this thread reaches it. This thread never
/// waits for a slot, so nested users never wait on each other. The first
/// task this thread runs that throws ends its share, as a serial run
/// would; rethrows the exception of the lowest-index task that threw,
/// after every started task has ended. `held`: the slots this thread holds
/// (0: none), lent back (SlotLoan) while it waits for its helpers at the end.
void run_tasks(const std::vector<std::function<void()>>& tasks, JobSlots* slots, int slots_per_task = 1,
               int held = 0);

/// Runs every task on a pool of `slots`' capacity threads, tasks started in
/// index order as their slots come free (task i holds `need[i]` slots,
/// clamped to 1..capacity, while it runs; null `slots`: one at a time in
/// this thread). Unlike run_tasks, the caller holds no slot: the pool uses
/// all of them (calibrate's runs). After a task throws no further task
/// starts; the exception of the lowest-index task that threw is rethrown
/// once every started task has ended.
void run_pool(const std::vector<std::function<void()>>& tasks, JobSlots* slots, const std::vector<int>& need);

}  // namespace lockstep

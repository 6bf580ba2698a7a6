#include "core/job_slots.h"

#include <sched.h>

#include <algorithm>

#include <atomic>
#include <exception>
#include <memory>
#include <thread>

namespace lockstep {

int available_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

JobSlots::JobSlots(int capacity) : capacity_(capacity < 1 ? 1 : capacity), free_(capacity_) {}

int JobSlots::acquire(int n) {
  n = clamp(n);
  std::unique_lock<std::mutex> lock(mu_);
  freed_.wait(lock, [&] { return free_ >= n; });
  free_ -= n;
  return n;
}

bool JobSlots::try_acquire(int n) {
  n = clamp(n);
  std::lock_guard<std::mutex> lock(mu_);
  if (free_ < n) return false;
  free_ -= n;
  return true;
}

bool JobSlots::acquire_unless(int n, const std::function<bool()>& give_up) {
  n = clamp(n);
  std::unique_lock<std::mutex> lock(mu_);
  freed_.wait(lock, [&] { return free_ >= n || give_up(); });
  if (free_ < n) return false;
  free_ -= n;
  return true;
}

void JobSlots::notify() {
  { std::lock_guard<std::mutex> lock(mu_); }
  freed_.notify_all();
}

void JobSlots::release(int n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_ += clamp(n);
    if (free_ > capacity_) free_ = capacity_;
  }
  freed_.notify_all();
}

SlotLoan::SlotLoan(JobSlots* slots, int n) : slots_(n > 0 ? slots : nullptr), n_(n) {
  if (slots_) slots_->release(n_);
}

SlotLoan::~SlotLoan() {
  if (slots_) slots_->acquire(n_);
}

void run_tasks(const std::vector<std::function<void()>>& tasks, JobSlots* slots, int slots_per_task, int held) {
  const size_t n = tasks.size();
  if (n == 0) return;  // nothing to run (and no empty array for g++ 16 to warn about)
  std::vector<std::exception_ptr> errors(n);
  // 0: not started; 1: taken by this thread; 2: taken by its helper.
  std::unique_ptr<std::atomic<int>[]> owner(new std::atomic<int>[n]);
  for (size_t i = 0; i < n; ++i) owner[i] = 0;
  auto take = [&](size_t i, int who) {
    int expected = 0;
    return owner[i].compare_exchange_strong(expected, who);
  };
  std::vector<std::thread> helpers;
  if (slots && slots_per_task <= slots->capacity())
    for (size_t i = 1; i < n; ++i)
      helpers.emplace_back([&, i] {
        if (!slots->acquire_unless(slots_per_task, [&] { return owner[i] != 0; })) return;
        if (take(i, 2)) {
          try {
            tasks[i]();
          } catch (...) {
            errors[i] = std::current_exception();
          }
        }
        slots->release(slots_per_task);
      });
  bool failed = false;
  for (size_t i = 0; i < n; ++i) {
    if (!take(i, 1)) continue;  // its helper runs it
    if (slots) slots->notify();  // its helper gives up
    if (failed) continue;        // as a serial run: nothing after the first error
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
      failed = true;
    }
  }
  bool helped = false;
  for (size_t i = 1; i < n; ++i) helped = helped || owner[i] == 2;
  {
    SlotLoan idle(helped ? slots : nullptr, held);  // this thread only waits now
    for (auto& t : helpers) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void run_pool(const std::vector<std::function<void()>>& tasks, JobSlots* slots, const std::vector<int>& need) {
  std::vector<std::exception_ptr> errors(tasks.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (size_t i; !failed && (i = next++) < tasks.size();) {
      int n = i < need.size() ? need[i] : 1;
      std::unique_ptr<SlotHold> hold;
      if (slots) hold = std::make_unique<SlotHold>(*slots, n);
      if (failed) return;
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  int width = slots ? slots->capacity() : 1;
  std::vector<std::thread> threads;
  for (int t = 1; t < width && static_cast<size_t>(t) < tasks.size(); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace lockstep

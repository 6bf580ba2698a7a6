#include "core/job_slots.h"

#include <exception>
#include <thread>

namespace lockstep {

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

void JobSlots::release(int n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_ += clamp(n);
    if (free_ > capacity_) free_ = capacity_;
  }
  freed_.notify_all();
}

void run_tasks(const std::vector<std::function<void()>>& tasks, JobSlots* slots, int slots_per_task) {
  std::vector<std::exception_ptr> errors(tasks.size());
  std::vector<std::thread> threads;
  std::vector<size_t> here;  // run in this thread, in order
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0 && slots && slots_per_task <= slots->capacity() && slots->try_acquire(slots_per_task)) {
      threads.emplace_back([&, i] {
        try {
          tasks[i]();
        } catch (...) {
          errors[i] = std::current_exception();
        }
        slots->release(slots_per_task);
      });
    } else {
      here.push_back(i);
    }
  }
  for (size_t i : here) {  // as a serial run: the first error ends them
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
      break;
    }
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace lockstep

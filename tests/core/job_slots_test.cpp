// Job slots and run_tasks, in-process: the budget is never exceeded, spare
// slots run tasks at once, a full budget runs them in order in the calling
// thread (stopping at the first error, as a serial run), and the error
// reported is the lowest-index task's.
#include "core/job_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lockstep {
namespace {

TEST(JobSlots, TakesAtMostItsCapacity) {
  JobSlots slots(2);
  EXPECT_EQ(slots.capacity(), 2);
  EXPECT_TRUE(slots.try_acquire(1));
  EXPECT_TRUE(slots.try_acquire(1));
  EXPECT_FALSE(slots.try_acquire(1));
  slots.release(1);
  EXPECT_TRUE(slots.try_acquire(1));
  slots.release(2);
  EXPECT_EQ(slots.acquire(5), 2);  // a 5-rank smoke on -j 2 takes both, not forever
  EXPECT_FALSE(slots.try_acquire(1));
  slots.release(2);
  EXPECT_EQ(JobSlots(0).capacity(), 1);
  EXPECT_EQ(JobSlots(-3).capacity(), 1);
}

TEST(JobSlots, AWaitingAcquireTakesTheSlotsReleased) {
  JobSlots slots(1);
  SlotHold* held = new SlotHold(slots, 1);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    SlotHold second(slots, 1);
    got = true;
  });
  delete held;
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_TRUE(slots.try_acquire(1));
}

TEST(RunTasks, SpareSlotsRunTasksAtOnce) {
  JobSlots slots(2);
  SlotHold mine(slots, 1);  // the caller's own slot; one spare
  std::mutex mu;
  std::condition_variable cv;
  bool first_started = false, second_started = false;
  // Each waits until the other has started: only a concurrent run ends.
  auto meet = [&](bool& me, bool& other) {
    std::unique_lock<std::mutex> lock(mu);
    me = true;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return other; }))
      throw std::runtime_error("ran alone");
  };
  run_tasks({[&] { meet(first_started, second_started); }, [&] { meet(second_started, first_started); }}, &slots);
  EXPECT_TRUE(first_started && second_started);
  EXPECT_TRUE(slots.try_acquire(1));  // the spare slot came back
  EXPECT_FALSE(slots.try_acquire(1));
}

// A caller that has run its share and only waits for a helper lends its
// slot: another job (here a thread of the test) runs meanwhile, and the
// caller holds its slot again once run_tasks returns.
TEST(RunTasks, AWaitingCallerLendsItsSlot) {
  JobSlots slots(2);
  SlotHold mine(slots, 1);
  std::mutex mu;
  std::condition_variable cv;
  bool helper_started = false, other_job_ran = false;
  auto slow = [&] {  // the helper's task: ends once another job got a slot
    std::unique_lock<std::mutex> lock(mu);
    helper_started = true;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return other_job_ran; }))
      throw std::runtime_error("no slot was lent");
  };
  auto quick = [&] {  // the caller's task: returns once the helper runs
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return helper_started; });
  };
  std::thread other([&] {
    {
      std::unique_lock<std::mutex> lock(mu);  // both slots are taken from here on
      cv.wait_for(lock, std::chrono::seconds(30), [&] { return helper_started; });
    }
    SlotHold job(slots, 1);  // waits for the lent slot
    std::lock_guard<std::mutex> lock(mu);
    other_job_ran = true;
    cv.notify_all();
  });
  run_tasks({quick, slow}, &slots, 1, /*held=*/1);
  other.join();
  EXPECT_TRUE(other_job_ran);
  EXPECT_TRUE(slots.try_acquire(1));  // the helper's slot is back, the caller's held again
  EXPECT_FALSE(slots.try_acquire(1));
}

// SlotLoan gives back and takes again; nothing for null slots or n 0.
TEST(SlotLoan, GivesBackForItsScope) {
  JobSlots slots(1);
  SlotHold mine(slots, 1);
  {
    SlotLoan idle(&slots, 1);
    EXPECT_TRUE(slots.try_acquire(1));
    slots.release(1);
  }
  EXPECT_FALSE(slots.try_acquire(1));
  {
    SlotLoan none(&slots, 0);
    SlotLoan null(nullptr, 1);
    EXPECT_FALSE(slots.try_acquire(1));
  }
}

TEST(RunTasks, WithoutSlotsTasksRunInOrderAndTheFirstErrorEndsThem) {
  std::string order;
  EXPECT_THROW(run_tasks({[&] { order += "a"; }, [&] {
                            order += "b";
                            throw std::runtime_error("b failed");
                          },
                          [&] { order += "c"; }},
                         nullptr),
               std::runtime_error);
  EXPECT_EQ(order, "ab");
  JobSlots full(1);
  SlotHold all(full, 1);
  order.clear();
  run_tasks({[&] { order += "a"; }, [&] { order += "b"; }, [&] { order += "c"; }}, &full);
  EXPECT_EQ(order, "abc");
}

TEST(RunTasks, TheLowestIndexErrorIsReported) {
  JobSlots slots(4);
  try {
    run_tasks({[] {}, [] { throw std::runtime_error("task 1"); }, [] { throw std::runtime_error("task 2"); }},
              &slots);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 1");
  }
  EXPECT_TRUE(slots.try_acquire(4));  // every slot given back
}

// run_pool: every slot is the pool's; no more run at once than the slots
// allow, a task needing them all runs alone, and every task runs.
TEST(RunPool, TasksShareTheSlotsAndNeverExceedThem) {
  JobSlots slots(2);
  std::atomic<int> busy{0}, peak{0}, done{0};
  std::atomic<bool> overlapped_with_wide{false};
  std::atomic<int> wide_running{0};
  std::vector<std::function<void()>> tasks;
  std::vector<int> need;
  for (int i = 0; i < 8; ++i) {
    bool wide = i % 4 == 3;
    need.push_back(wide ? 2 : 1);
    tasks.push_back([&, wide] {
      int w = wide ? 2 : 1;
      int now = busy += w;
      for (int p = peak; now > p && !peak.compare_exchange_weak(p, now);) {
      }
      if (wide) ++wide_running;
      else if (wide_running > 0) overlapped_with_wide = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (wide) --wide_running;
      busy -= w;
      ++done;
    });
  }
  run_pool(tasks, &slots, need);
  EXPECT_EQ(done, 8);
  EXPECT_EQ(peak, 2);
  EXPECT_FALSE(overlapped_with_wide);
  EXPECT_TRUE(slots.try_acquire(2));  // every slot given back
}

TEST(RunPool, AnErrorStopsNewTasksAndTheLowestIndexIsReported) {
  std::string order;
  try {
    run_pool({[&] { order += "a"; }, [&] {
                order += "b";
                throw std::runtime_error("b failed");
              },
              [&] { order += "c"; }},
             nullptr, {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "b failed");
  }
  EXPECT_EQ(order, "ab");
}

}  // namespace
}  // namespace lockstep

// tests/support/gp_gate.hpp — holds a counting flavor's grace periods closed until open(), so a
// test can act while a batch is inside its grace period (wait_entered) without timing anything.
//
//   gp_gate_of<CF> gate;          // installs CF::on_synchronize for its lifetime
//   std::thread runner(...);      // a batch that reaches its grace period
//   gate.wait_entered();          // the batch is inside it (writer lock released, if it does so)
//   ...                           // act
//   gate.open();                  // that GP, and every later one, passes
#pragma once

#include <condition_variable>
#include <latch>
#include <mutex>

namespace rcubatch::test {

template <class CountingFlavor>
class gp_gate_of {
 public:
  gp_gate_of() { CountingFlavor::on_synchronize = [this] { hold(); }; }
  ~gp_gate_of() { CountingFlavor::on_synchronize = nullptr; }
  gp_gate_of(const gp_gate_of&) = delete;
  gp_gate_of& operator=(const gp_gate_of&) = delete;

  /// Returns once a grace period has entered the gate.
  void wait_entered() { entered_.wait(); }
  /// Lets the held grace period, and every later one, through.
  void open() {
    {
      std::scoped_lock l(m_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  void hold() {
    std::unique_lock l(m_);
    if (!entered_counted_) {
      entered_counted_ = true;
      entered_.count_down();
    }
    cv_.wait(l, [this] { return open_; });
  }
  std::latch entered_{1};
  std::mutex m_;
  std::condition_variable cv_;
  bool entered_counted_ = false;
  bool open_ = false;
};

}  // namespace rcubatch::test

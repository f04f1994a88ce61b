// A budget hook that takes the object by non-const reference cannot be called as
// `std::size_t pending_bytes(const T&)`: without the shape check it was skipped silently and the
// budget charged sizeof(T) instead (issue 22, item 9).
#include <rcubatch.hpp>
#include <rcubatch/async_unregister.hpp>
#include <rcubatch/counting_flavor.hpp>

#include <mutex>
#include <string>

struct obj : rcubatch::registrable<obj> {
  std::string payload;
};
struct policy {
  using object_type = obj;
  bool publish(obj&) { return true; }
  void unlist(obj&) noexcept {}
  std::size_t pending_bytes(obj& o) { return sizeof(obj) + o.payload.capacity(); }
};

int main() {
  rcubatch::basic_registry<rcubatch::counting_flavor<>, std::mutex, policy> reg;
  rcubatch::async_unregister reclaimer(reg, rcubatch::async_options{.mode = rcubatch::reclaim_mode::manual});
}

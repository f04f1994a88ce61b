// Must NOT compile: close_many runs after the point of no return, so it must be noexcept.
#include <rcubatch/rollback_many.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
struct bad_policy {
  void unlist(obj&) noexcept {}
  void close_many(rcubatch::object_range<obj>) {}  // missing noexcept
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<obj> q;
  rcubatch::rollback_many(q, bad_policy{}, domain);
}

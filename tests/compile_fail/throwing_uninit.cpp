// Must NOT compile: uninit runs after the point of no return, so it must be noexcept.
#include <rcubatch/rollback_many.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
using flavor = rcubatch::counting_flavor<>;
struct bad_policy {
  void unlist(obj&) noexcept {}
  bool uninit(obj&, rcubatch::batch&) { return true; }  // missing noexcept
};

int main() {
  rcubatch::grace_domain<flavor> domain;
  rcubatch::unreg_queue<obj> q;
  rcubatch::rollback_many(q, bad_policy{}, domain);
}

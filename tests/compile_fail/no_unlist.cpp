// Without unlist nothing unpublishes the objects: a compile error unless the policy says
// publishes_nothing.
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
struct policy {
  void destroy(obj* o) noexcept { delete o; }
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<obj> q;
  rcubatch::rollback_many(q, policy{}, domain);
}

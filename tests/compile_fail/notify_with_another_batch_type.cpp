// notify's second parameter must be rcubatch::batch& (it was a flavor-specific batch before).
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
struct other_batch {};
struct policy {
  void unlist(obj&) noexcept {}
  void notify(obj&, other_batch&) noexcept {}
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<obj> q;
  rcubatch::rollback_many(q, policy{}, domain);
}

// A policy passed as const whose hooks are not const: every hook would be skipped silently.
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
struct policy {
  void unlist(obj&) noexcept {}  // not const
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<obj> q;
  const policy p;
  rcubatch::rollback_many(q, p, domain);
}

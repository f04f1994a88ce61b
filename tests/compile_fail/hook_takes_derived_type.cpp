// The queue's T is the common base; a hook taking the derived type cannot be called with T&.
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct base : rcubatch::registrable<base> {
  virtual ~base() = default;
};
struct session : base {};
struct policy {
  void unlist(session&) noexcept {}
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<base> q;
  rcubatch::rollback_many(q, policy{}, domain);
}

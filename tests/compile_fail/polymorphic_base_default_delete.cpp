// A polymorphic T without a virtual destructor and no destroy hook: delete through T* is undefined.
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct base : rcubatch::registrable<base> {
  virtual void f() {}
};
struct policy {
  void unlist(base&) noexcept {}
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<base> q;
  rcubatch::rollback_many(q, policy{}, domain);
}

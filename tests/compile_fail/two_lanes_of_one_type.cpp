// Each object type has one lane: two lanes of one type would split its objects between policies.
#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

struct obj : rcubatch::registrable<obj> {};
struct policy {
  void unlist(obj&) noexcept {}
};

int main() {
  rcubatch::grace_domain<rcubatch::counting_flavor<>> domain;
  rcubatch::unreg_queue<obj> a, b;
  rcubatch::rollback_many(domain, rcubatch::lane(a, policy{}), rcubatch::lane(b, policy{}));
}

// A derived object queued as its base, which has no virtual destructor.
#include <rcubatch.hpp>

struct base : rcubatch::registrable<base> {};
struct session : base {};

int main() {
  rcubatch::unreg_queue<base> q;
  session s;
  q.push(s);
}

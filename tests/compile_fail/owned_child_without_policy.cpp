// A policy owns children of a type that has no policy in the registry: the sessions' batches
// could not take their streams and would destroy each session under them. Must not compile.
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

struct session;
struct stream : rcubatch::registrable<stream> {
  rcubatch::owner_hook<session> owner;
};
struct session : rcubatch::registrable<session> {
  rcubatch::owned_list<stream, &stream::owner> streams;
};
struct session_policy : rcubatch::owning<&session::streams> {
  bool publish(session&) { return true; }
  void unlist(session&) noexcept {}
  using object_type = session;
};

int main() {
  rcubatch::registry<session_policy> table;  // no policy for stream
  static_cast<void>(table);
}

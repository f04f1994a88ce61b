// Packaging smoke test, shared by tests/find-package and tests/add-subdirectory: the public
// header is found, the library links, and one grace period is counted.
#include <rcubatch.hpp>

int main() {
  rcubatch::grace_domain<rcubatch::flavor::memb> d;
  d.synchronize();
  return d.stats().grace_periods == 1 ? 0 : 1;
}

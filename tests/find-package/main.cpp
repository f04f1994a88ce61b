// Packaging smoke test, shared by tests/find-package, tests/add-subdirectory and tests/pkg-config:
// the public header is found, the library links, and one grace period of the target's default
// flavor (memb, or the one rcubatch_select_flavor / rcubatch-<flavor>.pc chose) is counted.
#include <cstdio>

#include <rcubatch.hpp>

int main() {
  rcubatch::grace_domain<> d;
  d.synchronize();
  std::printf("rcubatch %.*s: %llu grace period\n", static_cast<int>(rcubatch::default_flavor::name.size()),
              rcubatch::default_flavor::name.data(), static_cast<unsigned long long>(d.stats().grace_periods));
  return d.stats().grace_periods == 1 ? 0 : 1;
}

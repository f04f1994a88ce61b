// tests/support/counting.hpp — a fixture for tests on the counting flavor: the flavor's counters
// and on_synchronize hook are zeroed before and after every test (written out 19 times before),
// and a grace domain on it is ready.
//
//   struct dismantle : counting_test<struct dismantle_tag> {};
//   TEST_F(dismantle, ...) { rollback_many(q, p, domain); EXPECT_EQ(fake::synchronizes(), 2u); }
//
// One Tag per fixture keeps the counts of one suite out of another's.
#pragma once

#include <gtest/gtest.h>

#include <rcubatch/counting_flavor.hpp>
#include <rcubatch/grace_domain.hpp>

namespace rcubatch::test {

template <class Tag>
struct counting_test : ::testing::Test {
  using fake = counting_flavor<Tag>;

  // Reset in the constructor, not SetUp: `domain` is built before SetUp would run.
  counting_test() { fake::reset(); }
  ~counting_test() override { fake::reset(); }

  grace_domain<fake> domain;
};

}  // namespace rcubatch::test

// Kept for the tests not yet moved to tests/support/ (ref_drain, async_unregister at the time of
// writing): the same names as before, now from the shared layer.
// New tests include the tests/support/ headers they need instead.
#pragma once

#include <rcubatch.hpp>
#include <rcubatch/counting_flavor.hpp>

#include "support/objects.hpp"
#include "support/policies.hpp"

// rcubatch.hpp — everything in rcubatch. Each header can also be included on its own.
#pragma once

#include "rcubatch/fwd.hpp"
#include "rcubatch/misuse.hpp"
#include "rcubatch/flavor.hpp"
#include "rcubatch/read_guard.hpp"
#include "rcubatch/annotate.hpp"
#include "rcubatch/grace_domain.hpp"
#include "rcubatch/ref_count.hpp"
#include "rcubatch/retire_node.hpp"
#include "rcubatch/registrable.hpp"
#include "rcubatch/unreg_queue.hpp"
#include "rcubatch/batch_stats.hpp"
#include "rcubatch/batch.hpp"
#include "rcubatch/policy.hpp"
#include "rcubatch/dismantle.hpp"
#include "rcubatch/ref_drain.hpp"
#include "rcubatch/rollback_many.hpp"

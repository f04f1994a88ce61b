// rcubatch/fwd.hpp — every public template of rcubatch, forward-declared with its defaults.
//
// Include this when a header only needs to name rcubatch types (for example a registry's policy
// header that takes `rcubatch::batch<device>&`). The default flavor is urcu-memb; a consumer target
// picks another one with the CMake function `rcubatch_select_flavor(<target> qsbr)`, which defines
// RCUBATCH_DEFAULT_FLAVOR for that target only.
#pragma once

#ifndef RCUBATCH_DEFAULT_FLAVOR
#define RCUBATCH_DEFAULT_FLAVOR memb
#endif

namespace rcubatch {

namespace flavor {
struct memb;
struct qsbr;
struct mb;
struct bp;
}  // namespace flavor
template <class... Flavors> struct flavor_list;  // flavor_list.hpp: liburcu_flavors, with_flavor

/// The flavor every template defaults to (see RCUBATCH_DEFAULT_FLAVOR above).
using default_flavor = flavor::RCUBATCH_DEFAULT_FLAVOR;

template <class Flavor = default_flavor> class read_guard;
template <class Flavor = default_flavor> class thread_registration;
template <class Flavor = default_flavor> class grace_domain;
template <class T> class registrable;
template <class T> class unreg_queue;
template <class T, class Policy> struct lane_spec;
template <class Lockable> struct unlock_during_waits;
template <class T> class object_range;
class batch;
template <class T, class... Indexes> class indexed;
template <class Flavor, class Lockable, class... Policies> class basic_registry;
template <class Registry> class async_unregister;
class unregister_ticket;

class ref_count;
struct retire_node;
struct batch_stats;
struct drain_options;
struct rollback_options;
struct registry_options;
struct async_options;
struct async_stats;
struct async_batch_report;

}  // namespace rcubatch

// rcubatch/fwd.hpp — every public template and class of rcubatch, declared once, with its defaults.
//
// Include this when a header only needs to name rcubatch types (for example a registry's policy
// header that takes `rcubatch::batch&` or `rcubatch::registry<P>&`). The default flavor is
// urcu-memb; a consumer target picks another one with the CMake function
// `rcubatch_select_flavor(<target> qsbr)`, which defines RCUBATCH_DEFAULT_FLAVOR for that target only.
//
// This is the one place a class template's default argument is written (function templates
// keep theirs where they are defined, e.g. with_flavor's flavor list): C++ forbids repeating one, so
// each defining header includes this file and declares its templates without defaults
// (tests/all_headers_test.cpp includes every header together and would not compile otherwise;
// tests/fwd_test.cpp names each template below with its defaults, from this file alone).
// Not declared here: concepts (rcu_flavor, lfht_flavor), variable templates (registers_lazily) and
// alias templates other than `registry`, which C++ cannot forward-declare; function templates
// without default arguments (rollback_many, lane, unregister_one, ...), which name no type.
//
// Cost: <functional> (std::equal_to<>, lfht_index's default KeyEqual) and <mutex> (std::mutex,
// registry's lock): both are included by the headers that define those templates anyway.
#pragma once

#include <functional>
#include <mutex>

#ifndef RCUBATCH_DEFAULT_FLAVOR
#define RCUBATCH_DEFAULT_FLAVOR memb
#endif

namespace rcubatch {

// flavor.hpp, counting_flavor.hpp
namespace flavor {
struct memb;
struct qsbr;
struct mb;
struct bp;
}  // namespace flavor
template <class... Flavors> struct flavor_list;  // flavor_list.hpp: liburcu_flavors, with_flavor
class unknown_flavor;

// phase.hpp, policy.hpp
enum class phase : unsigned char;
enum class phase_runs : unsigned char;
enum class phase_entered : unsigned char;
struct phase_row;
struct hook_row;

/// The flavor every template defaults to (see RCUBATCH_DEFAULT_FLAVOR above).
using default_flavor = flavor::RCUBATCH_DEFAULT_FLAVOR;

template <class Tag = void> struct counting_flavor;

// misuse.hpp
enum class misuse_kind : unsigned char;
enum class misuse_policy : unsigned char;
class misuse_error;
struct misuse_reporter_binding;
class scoped_misuse_policy;

// read_guard.hpp
struct adopt_registration_t;
template <class Flavor = default_flavor> class read_guard;
template <class Flavor = default_flavor> class thread_registration;
template <class Flavor = default_flavor> class offline_scope;
template <class Flavor = default_flavor> void quiescent_state();

// grace_domain.hpp
struct gp_cookie;
struct domain_stats;
template <class Flavor = default_flavor> class grace_domain;

// ref_count.hpp, retire_node.hpp, registrable.hpp, unreg_queue.hpp
class ref_count;
struct retire_node;
enum class reg_state : unsigned char;
template <class T> class registrable;
// ref_tracker.hpp, sharded_refs.hpp: the two other kinds of reference count, chosen per type
struct ref_holder;
class ref_token;
class tracked_ref_count;
template <class T> class tracked_registrable;
class sharded_ref_count;
template <class T> class sharded_registrable;
template <class U> struct registrable_type;
template <class T> class unreg_queue;

// batch_stats.hpp, batch.hpp, ref_drain.hpp, rollback_many.hpp
struct batch_stats;
template <class T> class object_range;
class batch;
struct drain_options;
struct rollback_options;
template <class Lockable> struct unlock_during_waits;
template <class T, class Policy> struct lane_spec;

// registry.hpp
template <class Flavor = default_flavor> grace_domain<Flavor>& default_domain() noexcept;
enum class publish_result : unsigned char;
struct registry_options;
template <class T, class... Indexes> class indexed;
template <class Flavor, class Lockable, class... Policies> class basic_registry;
/// The common spelling: the default flavor, a std::mutex.
template <class... Policies>
using registry = basic_registry<default_flavor, std::mutex, Policies...>;

// async_unregister.hpp, async_types.hpp, async_stats.hpp
enum class reclaim_mode : unsigned char;
enum class over_budget : unsigned char;
struct async_batch_report;
struct async_options;
struct async_stats;
template <class Registry> class async_unregister;
class unregister_ticket;

// index/lfht_index.hpp
template <class T> struct lfht_hook;
template <auto Member> struct key_member;
struct lfht_hash;
enum class lfht_growth : unsigned char;
struct lfht_options;
struct lfht_runtime_flavor;
template <class T, lfht_hook<T> T::*Hook, class KeyOf, class Flavor = default_flavor, class Hash = lfht_hash,
          class KeyEqual = std::equal_to<>>
class lfht_index;

// index/hlist_index.hpp
template <class T> struct hlist_hook;
struct hlist_options;
template <class T, hlist_hook<T> T::*Hook, class KeyOf, class Flavor = default_flavor, class Hash = lfht_hash,
          class KeyEqual = std::equal_to<>>
class hlist_index;

}  // namespace rcubatch

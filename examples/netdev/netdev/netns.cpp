#include "netdev/netns.hpp"

namespace netdev {

namespace {
struct name_is {
  std::string_view name;
  bool operator()(cds_lfht_node* n) const noexcept { return device_hash_node::owner(n)->name == name; }
};
struct index_is {
  int ifindex;
  bool operator()(cds_lfht_node* n) const noexcept { return device_hash_node::owner(n)->ifindex == ifindex; }
};
// The ifindex itself, as the kernel's dev_index_hash (ifindex & mask): ifindexes are handed out
// sequentially and never reused, so consecutive devices land in consecutive buckets — no two
// live devices share a bucket until the index space wraps the table, and a batch unlisting
// devices in creation order walks the bucket array sequentially instead of at random.
unsigned long hash_index(int ifindex) noexcept { return static_cast<unsigned long>(ifindex); }

// Each index starts with 4,096 buckets (64 KiB) and doubles when full (rcu_table::grow_if_needed).
constexpr unsigned long kMinBuckets = 4096;
}  // namespace

netns::netns(std::string name, const rcu_flavor_struct* flavor)
    : name_(std::move(name)), by_name_(flavor, kMinBuckets), by_index_(flavor, kMinBuckets), fib_(flavor), ipip_(flavor), gre_(flavor) {
  CDS_INIT_LIST_HEAD(&devices_);
}

netns::~netns() = default;

void netns::publish(net_device& dev) {
  // Indexes first, list last: a reader walking the list only meets fully indexed devices.
  by_name_.add_in_section(hash_name(dev.name), &dev.name_node.node);
  by_index_.add_in_section(hash_index(dev.ifindex), &dev.index_node.node);
  rcubatch::annotate_publish(&dev.list_node.link);  // TSan cannot see liburcu's publication
  cds_list_add_tail_rcu(&dev.list_node.link, &devices_);
}

void netns::grow_indexes() {
  by_name_.grow_if_needed();
  by_index_.grow_if_needed();
}

void netns::unpublish(net_device& dev) noexcept {
  cds_list_del_rcu(&dev.list_node.link);
  by_name_.remove_in_section(&dev.name_node.node);
  by_index_.remove_in_section(&dev.index_node.node);
}

net_device* netns::find_locked(std::string_view name) const noexcept {
  cds_lfht_node* n = by_name_.find_locked(hash_name(name), name_is{name});
  return n == nullptr ? nullptr : device_hash_node::owner(n);
}

net_device* netns::lookup_name(std::string_view name) const noexcept {
  cds_lfht_node* n = by_name_.find(hash_name(name), name_is{name});
  return n == nullptr ? nullptr : device_hash_node::owner(n);
}

net_device* netns::lookup_index(int ifindex) const noexcept {
  cds_lfht_node* n = by_index_.find(hash_index(ifindex), index_is{ifindex});
  return n == nullptr ? nullptr : device_hash_node::owner(n);
}

}  // namespace netdev

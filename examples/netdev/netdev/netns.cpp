#include "netdev/netns.hpp"

namespace netdev {

namespace {
// Each index starts with 4,096 buckets (64 KiB), keeps them allocated, and doubles when full
// (lfht_growth::on_add: growth in the writer's thread, never a shrink in the middle of a batch).
constexpr rcubatch::lfht_options kDeviceIndexOptions{.initial_buckets = 4096, .min_buckets = 4096};
}  // namespace

netns::netns(std::string name, const index_flavor* flavor)
    : name_(std::move(name)),
      by_name_(*flavor, kDeviceIndexOptions),
      by_index_(*flavor, kDeviceIndexOptions),
      fib_(flavor),
      ipip_(flavor),
      gre_(flavor) {
  CDS_INIT_LIST_HEAD(&devices_);
}

netns::~netns() = default;

void netns::publish(net_device& dev) {
  // Indexes first, list last: a reader walking the list only meets fully indexed devices. The
  // caller's read section defers the indexes' growth to grow_indexes.
  by_name_.add(dev);  // the caller checked the name free (name_taken): add, not add_unique
  by_index_.add(dev);
  rcubatch::annotate_publish(&dev.list_node.link);  // TSan cannot see liburcu's publication
  cds_list_add_tail_rcu(&dev.list_node.link, &devices_);
}

void netns::grow_indexes() {
  by_name_.grow_if_needed();
  by_index_.grow_if_needed();
}

void netns::unpublish(net_device& dev) noexcept {
  cds_list_del_rcu(&dev.list_node.link);
  by_name_.unlink(dev);
  by_index_.unlink(dev);
}

net_device* netns::find_locked(std::string_view name) const noexcept { return by_name_.find_locked(name); }

net_device* netns::lookup_name(std::string_view name) const noexcept { return by_name_.find(name); }

net_device* netns::lookup_index(int ifindex) const noexcept { return by_index_.find(ifindex); }

}  // namespace netdev

#include "netdev/netns.hpp"

#include <new>

namespace netdev {

namespace {
// Each index starts with 4,096 buckets (32 KiB) and never shrinks below; it grows 4x when full and
// shrinks below an eighth, each resize spread over the following updates (hlist_index.hpp).
constexpr rcubatch::hlist_options kDeviceIndexOptions{.initial_buckets = 4096, .min_buckets = 4096};
constexpr std::size_t kRetiredTablesBeforeReclaim = 8;
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
  // Indexes first, list last: a reader walking the list only meets fully indexed devices.
  by_name_.add(dev);  // the caller checked the name free (name_taken): add, not add_unique
  by_index_.add(dev);
  rcubatch::annotate_publish(&dev.list_node.link);  // TSan cannot see liburcu's publication
  cds_list_add_tail_rcu(&dev.list_node.link, &devices_);
}

void netns::grow_indexes() {
  if (by_name_.retired_tables() >= kRetiredTablesBeforeReclaim) by_name_.reclaim();
  if (by_index_.retired_tables() >= kRetiredTablesBeforeReclaim) by_index_.reclaim();
  ipip_.reclaim_retired(kRetiredTablesBeforeReclaim);
  gre_.reclaim_retired(kRetiredTablesBeforeReclaim);
}

void netns::reserve_devices(std::size_t more) noexcept {
  // Growing by 4 while 100,000 devices are added moves 86,016 entries per index (4,096, 16,384
  // and 65,536 at the three growths), each move a cold device line and a cold bucket; one resize
  // of the near-empty index up front moves nothing.
  try {
    by_name_.reserve(by_name_.size() + more);
    by_index_.reserve(by_index_.size() + more);
  } catch (const std::bad_alloc&) {  // hlist_index::resize changed nothing: grow as they fill
  }
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

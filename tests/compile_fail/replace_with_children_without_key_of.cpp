// replace_with_children pairs each new child with the old child it replaces by looking the new
// child's key up in the children's first index; an index without key_of cannot do that. Must not
// compile, with one sentence naming the requirement (not a template error inside registry.hpp).
#include <rcubatch/index/hlist_index.hpp>
#include <rcubatch/owned.hpp>
#include <rcubatch/registry.hpp>

#include <cstdint>
#include <vector>

struct zone;
struct record : rcubatch::registrable<record> {
  std::uint64_t id = 0;
  rcubatch::hlist_hook<record> by_id;
  rcubatch::owner_hook<zone> owner;
};
struct zone : rcubatch::registrable<zone> {
  std::uint64_t id = 0;
  rcubatch::hlist_hook<zone> by_id;
  rcubatch::owned_list<record, &record::owner> records;
};
using zone_ids = rcubatch::hlist_index<zone, &zone::by_id, rcubatch::key_member<&zone::id>>;
using record_ids = rcubatch::hlist_index<record, &record::by_id, rcubatch::key_member<&record::id>>;
/// An index that can add, unlink and replace, but not say an object's key.
struct record_ids_without_key_of : record_ids {
 private:
  using record_ids::key_of;
};
struct zone_policy : rcubatch::indexed<zone, zone_ids>, rcubatch::owning<&zone::records> {};

int main() {
  rcubatch::registry<zone_policy, rcubatch::indexed<record, record_ids_without_key_of>> table;
  zone old_zone, new_zone;
  std::vector<record*> records;
  table.replace_with_children(old_zone, new_zone, records);
}

// rcubatch/detail/rcu_chain.hpp — the forward range readers walk an RCU chain with: owned.hpp's
// children (owned_list::rcu_range) and membership.hpp's members (member_list::rcu_range).
//
// A chain is singly linked through std::atomic next pointers that writers store with release and
// readers load with acquire (owned.hpp's file comment says why not Boost.Intrusive or liburcu's
// rculist). Step says how to follow one: `static Node* next(Node&) noexcept` (the acquire load)
// and `static Value& value(Node&) noexcept` (what the iterator yields: the node itself for owned
// children, the edge's member for memberships). The range holds the first node as loaded when it
// was made; what a walk promises is the caller's contract (rcu_range in each header).
#pragma once

#include <cstddef>
#include <iterator>

namespace rcubatch::detail {

template <class Node, class Value, class Step>
class rcu_chain_range {
 public:
  /// A forward iterator yielding Value&; the end is a null node.
  class iterator {
   public:
    using value_type = std::remove_cv_t<Value>;
    using reference = Value&;
    using pointer = Value*;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::forward_iterator_tag;
    iterator() noexcept = default;
    explicit iterator(Node* n) noexcept : n_(n) {}
    Value& operator*() const noexcept { return Step::value(*n_); }
    Value* operator->() const noexcept { return &Step::value(*n_); }
    iterator& operator++() noexcept {
      n_ = Step::next(*n_);
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.n_ == b.n_; }

   private:
    Node* n_ = nullptr;
  };

  explicit rcu_chain_range(Node* first) noexcept : first_(first) {}
  iterator begin() const noexcept { return iterator(first_); }
  iterator end() const noexcept { return iterator(); }

 private:
  Node* first_;
};

}  // namespace rcubatch::detail

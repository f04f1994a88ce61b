# Compile-fail tests: each source must be rejected by the compiler with the named message.
# The target is excluded from the build; the test builds it and expects the failure.
# A case is a name (tests/compile_fail/<name>.cpp, ctest compile_fail.<name>) and a regex the
# compiler's output must match.
function(rcubatch_add_compile_fail_test name message)
  add_executable(${name} EXCLUDE_FROM_ALL compile_fail/${name}.cpp)
  target_link_libraries(${name} PRIVATE rcubatch::rcubatch)
  add_test(NAME compile_fail.${name}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${name})
  set_tests_properties(compile_fail.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${message}")
endfunction()

# A hook after the point of no return without noexcept.
foreach(hook IN ITEMS unlist notify destroy uninit close_many)
  rcubatch_add_compile_fail_test(throwing_${hook}
    "Policy::${hook} runs after the point of no return and must be noexcept")
endforeach()

# Hook shapes that would otherwise be skipped silently (each a use-after-free: an unlist that never
# runs leaves the object published while it is freed), and types a batch cannot destroy safely.
set(_cases
  # name                                              the compiler's message (a regex)
  const_policy_mutable_hook                           "the policy was passed as const, and its unlist"
  hook_takes_derived_type                             "the policy's member `unlist` cannot be called as `void unlist\\(T&\\) noexcept`"
  notify_with_another_batch_type                      "the policy's member `notify` cannot be called"
  no_unlist                                           "the policy has no unlist\\(T&\\) hook"
  polymorphic_base_default_delete                     "T is polymorphic and has no virtual destructor"
  derived_pushed_as_base_without_virtual_destructor   "queued as T, and T has no virtual destructor"
  two_lanes_of_one_type                               "each object type may have one lane only"
  pending_bytes_non_const                             "member `pending_bytes` cannot be called as"
  owned_child_without_policy                          "owns children \\(rcubatch::owning<&Parent::list>\\) of a type that no policy"
  replace_with_children_without_key_of                "its first index needs `key_of\\(const T&\\)` and `T\\* find_locked")
while(_cases)
  list(POP_FRONT _cases _name _message)
  rcubatch_add_compile_fail_test(${_name} "${_message}")
endwhile()

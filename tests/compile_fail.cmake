# Compile-fail tests: each source must be rejected by the compiler with the named message.
# The target is excluded from the build; the test builds it and expects the failure.
function(rcubatch_add_compile_fail_test name source message)
  add_executable(${name} EXCLUDE_FROM_ALL ${source})
  target_link_libraries(${name} PRIVATE rcubatch::rcubatch)
  add_test(NAME compile_fail.${name}
           COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${name})
  set_tests_properties(compile_fail.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${message}")
endfunction()

rcubatch_add_compile_fail_test(throwing_unlist compile_fail/throwing_unlist.cpp
  "Policy::unlist runs after the point of no return and must be noexcept")
rcubatch_add_compile_fail_test(throwing_notify compile_fail/throwing_notify.cpp
  "Policy::notify runs after the point of no return and must be noexcept")
rcubatch_add_compile_fail_test(throwing_destroy compile_fail/throwing_destroy.cpp
  "Policy::destroy runs after the point of no return and must be noexcept")
rcubatch_add_compile_fail_test(throwing_uninit compile_fail/throwing_uninit.cpp
  "Policy::uninit runs after the point of no return and must be noexcept")
rcubatch_add_compile_fail_test(throwing_close_many compile_fail/throwing_close_many.cpp
  "Policy::close_many runs after the point of no return and must be noexcept")
# Hook shapes that would otherwise be skipped silently (each a use-after-free: an unlist that never
# runs leaves the object published while it is freed).
rcubatch_add_compile_fail_test(const_policy_mutable_hook compile_fail/const_policy_mutable_hook.cpp
  "the policy was passed as const, and its unlist")
rcubatch_add_compile_fail_test(hook_takes_derived_type compile_fail/hook_takes_derived_type.cpp
  "the policy's member `unlist` cannot be called as `void unlist\\(T&\\) noexcept`")
rcubatch_add_compile_fail_test(notify_with_another_batch_type compile_fail/notify_with_another_batch_type.cpp
  "the policy's member `notify` cannot be called")
rcubatch_add_compile_fail_test(no_unlist compile_fail/no_unlist.cpp
  "the policy has no unlist\\(T&\\) hook")
rcubatch_add_compile_fail_test(polymorphic_base_default_delete compile_fail/polymorphic_base_default_delete.cpp
  "T is polymorphic and has no virtual destructor")
rcubatch_add_compile_fail_test(derived_pushed_as_base_without_virtual_destructor
  compile_fail/derived_pushed_as_base_without_virtual_destructor.cpp
  "queued as T, and T has no virtual destructor")
rcubatch_add_compile_fail_test(two_lanes_of_one_type compile_fail/two_lanes_of_one_type.cpp
  "each object type may have one lane only")

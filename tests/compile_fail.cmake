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

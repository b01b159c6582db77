# kernel-patch/host.cmake: the kernel-shared spinlock instrumentation (spinlock/, lockstat/,
# sysinfo/) built for the host: libraries for host tools, GoogleTest binaries, the benchmark,
# and a freestanding compile check with the kernel's flags. Included by
# kernel-patch/CMakeLists.txt; paths are relative to this file.
set(SPINLAB_KP ${CMAKE_CURRENT_LIST_DIR})

# Sources compiled once more with the kernel's flags, so a libc call, a C++ library header,
# floating point or a static constructor in them breaks the host build, not only the kernel's.
function(spinlab_freestanding_check name link)
  add_library(${name} OBJECT ${ARGN})
  target_link_libraries(${name} PRIVATE ${link})
  target_include_directories(${name} PRIVATE ${SPINLAB_KP})
  target_compile_options(${name} PRIVATE
    -ffreestanding -fno-exceptions -fno-rtti -nostdinc++ -mno-red-zone -mgeneral-regs-only
    -fno-threadsafe-statics -Werror)
endfunction()

# spinlock/: header-only (templates over the environment policy).
add_library(spinlab_spinlock INTERFACE)
target_include_directories(spinlab_spinlock INTERFACE ${SPINLAB_KP})
target_link_libraries(spinlab_spinlock INTERFACE spinlab_abi)

set(SPINLAB_LOCKSTAT_SOURCES
  ${SPINLAB_KP}/lockstat/log2_table.cc
  ${SPINLAB_KP}/lockstat/params.cc
  ${SPINLAB_KP}/lockstat/perf_record.cc
)
set(SPINLAB_SYSINFO_SOURCES
  ${SPINLAB_KP}/sysinfo/memory_buffer.cc
  ${SPINLAB_KP}/sysinfo/sysinfo_handler.cc
)

# lockstat/: recording, merging, parameters, the table formatter (the collector links this
# to print the same table as the guest).
add_library(spinlab_lockstat STATIC ${SPINLAB_LOCKSTAT_SOURCES})
target_link_libraries(spinlab_lockstat PUBLIC spinlab_spinlock spinlab_klib)  # lib/format.cc

# sysinfo/: the query/set handler.
add_library(spinlab_sysinfo STATIC ${SPINLAB_SYSINFO_SOURCES})
target_link_libraries(spinlab_sysinfo PUBLIC spinlab_lockstat spinlab_locktrace)

# The same sources with the kernel's flags, so a libc call, a C++ library header, floating
# point or a static constructor breaks the host build, not only the kernel's.
spinlab_freestanding_check(spinlab_lockstat_freestanding_check spinlab_spinlock
  ${SPINLAB_LOCKSTAT_SOURCES} ${SPINLAB_SYSINFO_SOURCES} ${SPINLAB_KP}/lockstat/freestanding_check.cc)

# SPINLOCK_INIT with a name that has no lock class is a compile error (kern/lockclass.h).
add_test(NAME spinlock_init_unclassed_name_does_not_compile
  COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DKP=${SPINLAB_KP}
          -DOUT=${CMAKE_CURRENT_BINARY_DIR} -P ${SPINLAB_KP}/kern/unclassed_lock_check.cmake)
set_tests_properties(spinlock_init_unclassed_name_does_not_compile PROPERTIES LABELS "unit")

add_executable(spinlock_test ${SPINLAB_KP}/spinlock/spinlock_test.cc)
target_link_libraries(spinlock_test PRIVATE spinlab_spinlock GTest::gtest_main Threads::Threads)
gtest_discover_tests(spinlock_test DISCOVERY_TIMEOUT 30)

# Lab 5's reference solution as lock=student (spinlock/student_solution_test.cc says how).
# labs/solutions/ may be removed before the labs are handed out: then there is nothing to test.
set(SPINLAB_STUDENT_SOLUTION ${SPINLAB_KP}/../labs/solutions/student_lock_solution.h)
if(EXISTS ${SPINLAB_STUDENT_SOLUTION})
  add_executable(student_solution_test ${SPINLAB_KP}/spinlock/student_solution_test.cc)
  target_include_directories(student_solution_test PRIVATE ${SPINLAB_KP}/spinlock)
  target_compile_definitions(student_solution_test PRIVATE
    SPINLAB_STUDENT_SOLUTION="${SPINLAB_STUDENT_SOLUTION}")
  target_link_libraries(student_solution_test PRIVATE spinlab_spinlock GTest::gtest_main Threads::Threads)
  gtest_discover_tests(student_solution_test DISCOVERY_TIMEOUT 30)
endif()

add_executable(lockstat_test
  ${SPINLAB_KP}/lockstat/halt_log_test.cc
  ${SPINLAB_KP}/lockstat/instrumented_lock_test.cc
  ${SPINLAB_KP}/lockstat/lhp_test.cc
  ${SPINLAB_KP}/lockstat/log2_bucket_test.cc
  ${SPINLAB_KP}/lockstat/log2_table_test.cc
  ${SPINLAB_KP}/lockstat/params_test.cc
  ${SPINLAB_KP}/lockstat/perf_record_test.cc
  ${SPINLAB_KP}/lockstat/timing_test.cc
)
target_link_libraries(lockstat_test PRIVATE spinlab_lockstat GTest::gtest_main Threads::Threads)
gtest_discover_tests(lockstat_test DISCOVERY_TIMEOUT 30)

# The guest's table formatter on the host, for analysis/'s test that spinlab-report prints the
# same table as spinstat.
add_executable(log2_table_print ${SPINLAB_KP}/lockstat/log2_table_print.cc)
target_link_libraries(log2_table_print PRIVATE spinlab_lockstat)

add_executable(sysinfo_test ${SPINLAB_KP}/sysinfo/sysinfo_handler_test.cc)
target_link_libraries(sysinfo_test PRIVATE spinlab_sysinfo GTest::gtest_main)
gtest_discover_tests(sysinfo_test DISCOVERY_TIMEOUT 30)

# Cycles per uncontended acquire+release, every algorithm x instrumentation level, and the
# clocks. JSON: spinlock_benchmark --benchmark_out=FILE --benchmark_out_format=json
add_executable(spinlock_benchmark ${SPINLAB_KP}/lockstat/instrumented_lock_benchmark.cc)
target_link_libraries(spinlock_benchmark PRIVATE spinlab_lockstat benchmark::benchmark)

# channel/: the frame codec, the region header, the clock area and the channel server, as the
# kernel runs them; the collector speaks to the guest with the same code.
set(SPINLAB_CHANNEL_SOURCES
  ${SPINLAB_KP}/channel/crc32c.cc
  ${SPINLAB_KP}/channel/frame_codec.cc
  ${SPINLAB_KP}/channel/region_header.cc
  ${SPINLAB_KP}/channel/clock_area.cc
  ${SPINLAB_KP}/channel/channel_server.cc
)
add_library(spinlab_channel STATIC ${SPINLAB_CHANNEL_SOURCES})
target_include_directories(spinlab_channel PUBLIC ${SPINLAB_KP})
target_link_libraries(spinlab_channel PUBLIC spinlab_abi)

spinlab_freestanding_check(spinlab_channel_freestanding_check spinlab_abi ${SPINLAB_CHANNEL_SOURCES})

add_executable(channel_test
  ${SPINLAB_KP}/channel/crc32c_test.cc
  ${SPINLAB_KP}/channel/frame_codec_test.cc
  ${SPINLAB_KP}/channel/region_header_test.cc
  ${SPINLAB_KP}/channel/channel_server_test.cc
)
target_link_libraries(channel_test PRIVATE spinlab_channel GTest::gtest_main)
gtest_discover_tests(channel_test)

# locktrace/: trace sessions: parameters, the per-CPU buffer writer, the host's drain, the
# buffer parser and the trace file (spinlab/trace.h). The writer runs in the kernel too.
set(SPINLAB_LOCKTRACE_SOURCES
  ${SPINLAB_KP}/locktrace/buffer_parser.cc
  ${SPINLAB_KP}/locktrace/drain.cc
  ${SPINLAB_KP}/locktrace/trace_session.cc
  ${SPINLAB_KP}/locktrace/stack_events.cc
  ${SPINLAB_KP}/locktrace/stack_settings.cc
  ${SPINLAB_KP}/locktrace/trace_file.cc
  ${SPINLAB_KP}/locktrace/writer.cc
  ${SPINLAB_KP}/locktrace/user_ring.cc
)
add_library(spinlab_locktrace STATIC ${SPINLAB_LOCKTRACE_SOURCES})
target_link_libraries(spinlab_locktrace PUBLIC spinlab_lockstat spinlab_channel spinlab_stackwalk)

spinlab_freestanding_check(spinlab_locktrace_freestanding_check spinlab_spinlock
  ${SPINLAB_LOCKTRACE_SOURCES})

add_executable(locktrace_test
  ${SPINLAB_KP}/locktrace/sampling_test.cc
  ${SPINLAB_KP}/locktrace/trace_session_test.cc
  ${SPINLAB_KP}/locktrace/spinlock_event_test.cc
  ${SPINLAB_KP}/locktrace/stack_events_test.cc
  ${SPINLAB_KP}/locktrace/trace_file_test.cc
  ${SPINLAB_KP}/locktrace/writer_test.cc
  ${SPINLAB_KP}/locktrace/user_ring_test.cc
)
target_link_libraries(locktrace_test PRIVATE spinlab_locktrace GTest::gtest_main Threads::Threads)
gtest_discover_tests(locktrace_test DISCOVERY_TIMEOUT 30)

# Cycles per spinlock event written; drain throughput through a /dev/shm file.
add_executable(locktrace_benchmark ${SPINLAB_KP}/locktrace/writer_benchmark.cc)
target_link_libraries(locktrace_benchmark PRIVATE spinlab_locktrace benchmark::benchmark
  Threads::Threads)

# Cycles per ring-3 spinlock event through the user-mode logger (user_ring.h), the take included:
# the spinlab side of the LTTng-UST anchor (scripts/bench-lttng-anchor.sh).
add_executable(user_ring_benchmark ${SPINLAB_KP}/locktrace/user_ring_benchmark.cc)
target_link_libraries(user_ring_benchmark PRIVATE spinlab_locktrace benchmark::benchmark
  Threads::Threads)

# Cycles per stack walk (depth 8/16/32) and per event stack, cached reference vs inline.
add_executable(stack_benchmark ${SPINLAB_KP}/locktrace/stack_benchmark.cc)
target_link_libraries(stack_benchmark PRIVATE spinlab_locktrace benchmark::benchmark Threads::Threads)

# stackwalk/: call stacks by frame pointer and the stack cache (ETW's, stackwalk/stack_cache.h).
# Pure; the kernel's trace layer uses it for stacks on events (locktrace/stack_events,
# kern/locktrace_stacks).
set(SPINLAB_STACKWALK_SOURCES
  ${SPINLAB_KP}/stackwalk/frame_walk.cc
  ${SPINLAB_KP}/stackwalk/stack_cache.cc
)
add_library(spinlab_stackwalk STATIC ${SPINLAB_STACKWALK_SOURCES})
target_include_directories(spinlab_stackwalk PUBLIC ${SPINLAB_KP})

spinlab_freestanding_check(spinlab_stackwalk_freestanding_check spinlab_abi ${SPINLAB_STACKWALK_SOURCES})

add_executable(stackwalk_test
  ${SPINLAB_KP}/stackwalk/frame_walk_test.cc
  ${SPINLAB_KP}/stackwalk/stack_cache_test.cc
)
target_link_libraries(stackwalk_test PRIVATE spinlab_stackwalk GTest::gtest_main)
gtest_discover_tests(stackwalk_test DISCOVERY_TIMEOUT 30)

# The kernel Makefile's dependency files: a header change rebuilds the objects that include it,
# also when the compiler is handed the object path relative (ccache's base_dir does that).
# Compiles one kernel object twice at most (a few seconds).
add_test(NAME kernel_header_deps
  COMMAND ${SPINLAB_KP}/header_deps_test.sh ${SPINLAB_KP} ${CMAKE_CURRENT_BINARY_DIR}/header-deps)
set_tests_properties(kernel_header_deps PROPERTIES TIMEOUT 120)

# Each layer of kernel-patch/ includes only its own layer and the ones below it, as README.md's
# folder table gives them (a grep of the #includes: well under a second).
add_test(NAME kernel_layering COMMAND ${SPINLAB_KP}/layering_test.py ${SPINLAB_KP})

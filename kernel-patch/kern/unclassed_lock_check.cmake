# kern/unclassed_lock_check.cmake: SPINLOCK_INIT with a name that has no lock class does not
# compile (kern/lockclass.h, static_lock_class), and one with a class does. Run by ctest:
#   cmake -DCXX=<compiler> -DKP=<kernel-patch dir> -DOUT=<scratch dir> -P unclassed_lock_check.cmake
foreach(case classed unclassed)
  if(case STREQUAL "classed")
    set(name "pci")
  else()
    set(name "pcie")
  endif()
  file(WRITE ${OUT}/${case}.cc "#include \"kern/spinlock.h\"\nSpinlock l = SPINLOCK_INIT(\"${name}\");\n")
  execute_process(
    COMMAND ${CXX} -std=c++20 -ffreestanding -fno-exceptions -fno-rtti -I${KP}/abi -I${KP}
            -DSPINLAB_INSTRUMENT=1 -fsyntax-only ${OUT}/${case}.cc
    RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(case STREQUAL "classed" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "SPINLOCK_INIT(\"pci\") should compile:\n${err}")
  endif()
  if(case STREQUAL "unclassed")
    if(rc EQUAL 0)
      message(FATAL_ERROR "SPINLOCK_INIT(\"pcie\") compiled, but pcie has no lock class")
    endif()
    if(NOT err MATCHES "spinlock_init_names_a_lock_without_a_class")
      message(FATAL_ERROR "SPINLOCK_INIT(\"pcie\") failed for another reason:\n${err}")
    endif()
  endif()
endforeach()
message(STATUS "SPINLOCK_INIT: a classed name compiles, an unclassed one does not")

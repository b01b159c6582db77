# kernel-patch/abi/names.cmake: abi_names.json, the names of the ABI's enums (each enum's one
# table, spinlab/enum_names.h) for the Python analysis (analysis/spinlab_report/names.py).
# spinlab-abi-names-writer, built from the same headers as everything else, writes it at build
# time to build/host/abi_names.json (target spinlab-abi-names: in `all` and in spinlab-tools);
# `cmake --install` puts it beside spinlab_report's modules (frontend/CMakeLists.txt).
add_executable(spinlab-abi-names-writer ${CMAKE_CURRENT_LIST_DIR}/abi_names.cc)
target_link_libraries(spinlab-abi-names-writer PRIVATE spinlab_abi)
# A build tool, not one of the lab's programs: kept out of build/host/bin.
set_target_properties(spinlab-abi-names-writer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tools)
set(SPINLAB_ABI_NAMES ${CMAKE_BINARY_DIR}/abi_names.json)
add_custom_command(OUTPUT ${SPINLAB_ABI_NAMES}
  COMMAND spinlab-abi-names-writer ${SPINLAB_ABI_NAMES}
  DEPENDS spinlab-abi-names-writer
  COMMENT "abi_names.json: the ABI's enum names for analysis/"
  VERBATIM)
add_custom_target(spinlab-abi-names ALL DEPENDS ${SPINLAB_ABI_NAMES})

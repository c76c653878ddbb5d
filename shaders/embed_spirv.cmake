# cmake -DGLSLANG=<glslangValidator> -DSRC=<x.comp> -DOUT=<x.h> -DNAME=<array>
#       -DDEFINES=<-DA=1|-DB=1> -P embed_spirv.cmake
#
# Compiles one kernel variant to SPIR-V as a C array of uint32 words (aligned
# as vkCreateShaderModule requires) and makes the array `static`, so each
# variant stays private to the one file of the plugin that includes it.
# Vulkan 1.1 SPIR-V (1.3): subgroup operations are core there.
string(REPLACE "|" ";" DEFINES "${DEFINES}")
get_filename_component(out_dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${out_dir})
execute_process(
  COMMAND ${GLSLANG} -V --target-env vulkan1.1 --vn ${NAME} ${DEFINES} -o ${OUT}.tmp ${SRC}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE log
  ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "glslangValidator failed on ${SRC} (${DEFINES}):\n${log}")
endif()
file(READ ${OUT}.tmp text)
file(REMOVE ${OUT}.tmp)
string(REPLACE "const uint32_t ${NAME}[]" "static const uint32_t ${NAME}[]" text "${text}")
if(NOT text MATCHES "static const uint32_t ${NAME}\\[\\]")
  message(FATAL_ERROR "embed_spirv: unexpected glslangValidator output for ${NAME}")
endif()
file(WRITE ${OUT} "${text}")

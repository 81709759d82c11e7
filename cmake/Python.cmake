# The Python package `tensorstream` (src/python/): a pybind11 extension over the torch::Tensor
# API and the pure-Python modules around it. Built by default where pybind11 and a Python that
# can `import torch` are present; tensors cross into Python without a copy because Debian's
# python3-torch runs on the same libtorch as libtorch-dev. Sanitizer builds leave it out: the
# interpreter that loads it is not instrumented.
set(tensorstream_python_default OFF)
set(tensorstream_python_missing "")
if(TENSORSTREAM_WITH_TORCH AND NOT TENSORSTREAM_SANITIZE_ADDRESS AND NOT TENSORSTREAM_SANITIZE_THREAD)
  # Debian's python3-torch belongs to the system interpreter; an interpreter earlier on PATH
  # (pyenv, a virtual environment) would not have it.
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python 3.9 QUIET COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.6 CONFIG QUIET)
  if(NOT Python_FOUND)
    set(tensorstream_python_missing "Python's development files (python3-dev)")
  elseif(NOT pybind11_FOUND)
    set(tensorstream_python_missing "pybind11 (pybind11-dev)")
  else()
    execute_process(COMMAND ${Python_EXECUTABLE} -c "import torch; print(torch.__version__)"
      RESULT_VARIABLE tensorstream_python_torch OUTPUT_VARIABLE tensorstream_python_torch_version
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT tensorstream_python_torch EQUAL 0)
      set(tensorstream_python_missing "PyTorch for ${Python_EXECUTABLE} (python3-torch)")
    else()
      set(tensorstream_python_default ON)
    endif()
  endif()
endif()
option(TENSORSTREAM_PYTHON "Build the Python package (needs pybind11-dev and python3-torch)"
  ${tensorstream_python_default})
if(NOT TENSORSTREAM_PYTHON)
  if(tensorstream_python_missing)
    message(STATUS "Python package: off, missing ${tensorstream_python_missing}")
  endif()
  return()
endif()
if(tensorstream_python_missing)
  message(FATAL_ERROR "TENSORSTREAM_PYTHON=ON needs ${tensorstream_python_missing}")
endif()
if(NOT TENSORSTREAM_WITH_TORCH)
  message(FATAL_ERROR "TENSORSTREAM_PYTHON=ON needs TENSORSTREAM_WITH_TORCH=ON")
endif()

# The package is assembled in the build tree as it is installed, so that tests import it with
# PYTHONPATH=${tensorstream_python_dir}: the .py files are linked there (edits need no rebuild),
# the extension is built there.
set(tensorstream_python_dir ${PROJECT_BINARY_DIR}/python)
file(GLOB tensorstream_python_files CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/src/python
  ${PROJECT_SOURCE_DIR}/src/python/tensorstream/*.py ${PROJECT_SOURCE_DIR}/src/python/tensorstream/*.pyi
  ${PROJECT_SOURCE_DIR}/src/python/tensorstream/py.typed)
file(MAKE_DIRECTORY ${tensorstream_python_dir}/tensorstream)
# What the extension is compiled against, so that another interpreter fails at import with one
# line saying so instead of with whatever it trips over first.
configure_file(src/python/_built_for.py.in ${tensorstream_python_dir}/tensorstream/_built_for.py
  @ONLY)
foreach(file ${tensorstream_python_files})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/python/${file} ${tensorstream_python_dir}/${file}
    SYMBOLIC)
endforeach()

# libtorch_python: THPVariable_Wrap, which hands a C++ tensor to Python as a torch.Tensor.
find_library(TENSORSTREAM_TORCH_PYTHON_LIBRARY torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib
  REQUIRED)

file(GLOB tensorstream_python_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/python/*.cpp)
tensorstream_unity_sources(tensorstream_python_sources tensorstream_python
  ${tensorstream_python_sources})
# NO_EXTRAS: no link-time optimisation, which would add a minute of serial linking on 2 cores.
pybind11_add_module(tensorstream_python MODULE NO_EXTRAS ${tensorstream_python_sources})
set_target_properties(tensorstream_python PROPERTIES
  OUTPUT_NAME _tensorstream
  LIBRARY_OUTPUT_DIRECTORY ${tensorstream_python_dir}/tensorstream)
target_include_directories(tensorstream_python PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The static library: the extension is one self-contained file next to the .py modules, needing
# only system libraries (libtorch among them) at import.
target_link_libraries(tensorstream_python PRIVATE tensorstream_static
  ${TENSORSTREAM_TORCH_PYTHON_LIBRARY} tensorstream_warnings)

# Installed where the interpreter looks for packages under the install prefix: Debian's patched
# Python reads PREFIX/lib/python3.X/dist-packages (for /usr/local), others site-packages.
if(NOT DEFINED TENSORSTREAM_PYTHON_INSTALL_DIR)
  execute_process(COMMAND ${Python_EXECUTABLE} -c
    "import sysconfig; print('dist-packages' if sysconfig.get_path('platlib').endswith('dist-packages') else 'site-packages')"
    OUTPUT_VARIABLE tensorstream_python_packages OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(TENSORSTREAM_PYTHON_INSTALL_DIR
    "lib/python${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}/${tensorstream_python_packages}"
    CACHE STRING "Where `cmake --install` puts the Python package, relative to the prefix")
endif()
install(TARGETS tensorstream_python LIBRARY DESTINATION ${TENSORSTREAM_PYTHON_INSTALL_DIR}/tensorstream)
install(FILES ${tensorstream_python_dir}/tensorstream/_built_for.py
  DESTINATION ${TENSORSTREAM_PYTHON_INSTALL_DIR}/tensorstream)
install(DIRECTORY src/python/tensorstream DESTINATION ${TENSORSTREAM_PYTHON_INSTALL_DIR}
  FILES_MATCHING PATTERN "*.py" PATTERN "*.pyi" PATTERN "py.typed" PATTERN "__pycache__" EXCLUDE)

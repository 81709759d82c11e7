#pragma once
// Handing a C++ tensor to Python (for the extension's few files that make tensors).

#include <torch/csrc/autograd/python_variable.h>

#include <pybind11/pybind11.h>

namespace tensorstream::python {

/// `tensor` as a torch.Tensor over the same memory, without a copy.
inline pybind11::object python_tensor(at::Tensor tensor) {
  auto variable = pybind11::reinterpret_steal<pybind11::object>(THPVariable_Wrap(std::move(tensor)));
  if (!variable) throw pybind11::error_already_set();
  return variable;
}

}  // namespace tensorstream::python

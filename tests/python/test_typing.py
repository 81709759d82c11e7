"""The type stubs and docstrings editors read match what the package has."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import tensorstream
from tensorstream import _tensorstream

STUB = pathlib.Path(tensorstream.__file__).with_name("_tensorstream.pyi")


def stub_signatures():
    """{qualified name: [parameter names]} of the functions and methods the stub declares."""
    found = {}

    def visit(body, scope):
        for node in body:
            if isinstance(node, ast.ClassDef):
                found[scope + node.name] = None
                visit(node.body, scope + node.name + ".")
            elif isinstance(node, ast.FunctionDef):
                is_property = any(getattr(d, "id", "") == "property" for d in node.decorator_list)
                names = [a.arg for a in node.args.args if a.arg != "self"]
                found[scope + node.name] = "property" if is_property else names

    visit(ast.parse(STUB.read_text()).body, "")
    return found


def module_signatures():
    """The same for the extension, from pybind11's docstring signatures."""
    found = {}

    def parameters(function):
        first = function.__doc__.splitlines()[0]
        arguments = re.match(r"[\w.]+\((.*)\) ->", first).group(1)
        return [part.split(":")[0].strip() for part in arguments.split(", ")
                if part and not part.startswith("self")]

    for name, value in vars(_tensorstream).items():
        if name.startswith("__"):
            continue
        if isinstance(value, type):
            found[name] = None
            for member, attribute in vars(value).items():
                if member.startswith("__") and member != "__init__":
                    continue
                if isinstance(attribute, property):
                    found[f"{name}.{member}"] = "property"
                elif callable(attribute):
                    found[f"{name}.{member}"] = parameters(attribute)
        elif callable(value):
            found[name] = parameters(value)
    return found


def test_the_stub_declares_exactly_what_the_extension_defines():
    assert stub_signatures() == module_signatures()


def test_the_package_is_marked_typed():
    assert pathlib.Path(tensorstream.__file__).with_name("py.typed").exists()


def test_every_public_name_has_a_docstring():
    for name in tensorstream.__all__:
        value = getattr(tensorstream, name)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismodule(value):
            assert inspect.getdoc(value), name
    for name, member in vars(tensorstream.SafeTensorsStreamer).items():
        if not name.startswith("_") and callable(member):
            assert inspect.getdoc(member), name

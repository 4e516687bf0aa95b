"""The cake:: operator schemas are one list: bindings/torch/ops.h (the C++ operators) and
cake/torch/_schemas.py (the Python operators) hold the same strings in the same order. Needs no
torch: both files are read as text."""

import ast
import re

from conftest import PYTHON_DIR, REPO


def _cpp_schemas():
    text = (REPO / "bindings" / "torch" / "ops.h").read_text()
    body = text[text.index("kSchemas[] = {"):text.index("};", text.index("kSchemas[] = {"))]
    out = []
    for entry in re.findall(r"\{((?:\s*\"[^\"]*\")+)\s*\}", body):
        out.append("".join(re.findall(r"\"([^\"]*)\"", entry)))
    return out


def _python_schemas():
    tree = ast.parse((PYTHON_DIR / "cake" / "torch" / "_schemas.py").read_text())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "ALL":
                order = [e.id for e in node.value.elts]
            elif isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                values[name] = node.value.value
            elif isinstance(node.value, ast.JoinedStr) or isinstance(node.value, ast.BinOp):
                raise AssertionError(f"{name}: a plain string literal expected")
    return [values[n] for n in order]


def test_cpp_and_python_schemas_are_the_same_list():
    cpp, py = _cpp_schemas(), _python_schemas()
    assert len(cpp) == 10, cpp
    assert cpp == py


def test_native_library_version_is_declared_once():
    native = (PYTHON_DIR / "cake" / "torch" / "_native.py").read_text()
    built = re.search(r'^BUILT_AGAINST = "(\d+)\.(\d+)\.(\d+)"$', native, re.M)
    assert built, "cake/torch/_native.py declares BUILT_AGAINST"
    cmake = (REPO / "bindings" / "torch" / "CMakeLists.txt").read_text()
    assert "_native.py" in cmake and "BUILT_AGAINST" in cmake

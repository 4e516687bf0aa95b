"""GPU: every call the fake implementations refuse (test_fakes_host.py's lists) is refused by the
real operator too, with the same error class (after cake.torch's conversion of the library's
status) and, where this libcake serves the norm-gate variants, the same words."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from test_fakes_host import MAIN_GRAD_REFUSED, NORMGATE_REFUSED, SWIGLU_REFUSED, _re, acc  # noqa: E402,E501


def _real_error(case):
    try:
        case()
    except (RuntimeError, ValueError, TypeError) as e:
        converted = ct._cake_error(e)
        return converted if converted is not None else e
    raise AssertionError("the real operator accepted it")


@pytest.mark.parametrize("case,error,words", NORMGATE_REFUSED + SWIGLU_REFUSED)
def test_the_real_operator_refuses_it_too(case, error, words):
    import inspect
    import re

    if "cuda:1" in inspect.getsource(case) and torch.cuda.device_count() < 2:
        pytest.skip("needs a second GPU")
    err = _real_error(case)
    if "only the SiLU gate" in str(err):  # a libcake from before the variants: refused, unnamed
        assert isinstance(err, cake.UnsupportedShapeError)
        return
    assert isinstance(err, error), (type(err), err)
    assert re.search(_re(words), str(err)), str(err)


@pytest.mark.parametrize("dw,words", MAIN_GRAD_REFUSED)
def test_the_real_accumulating_backward_refuses_it_too(dw, words):
    err = _real_error(lambda: acc(dw()))
    assert isinstance(err, ValueError) and words in str(err), str(err)

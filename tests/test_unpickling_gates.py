"""The unpickling guard's gates one by one (issue 29 point 5, issue 30 point 2), on the standard library's own classes
and functions: each gate refuses in words what it must and admits what honest pickles use. The whole guard against
numpy, pandas and scikit-learn pickles is tests/test_unpickling.py (slow)."""
import codecs
import collections
import copyreg
import io
import pickle
import types

import pytest

from kit import jailed


def resolve(module, name):  # pickle's own lookup, as the guard is given it
    unpickler = pickle._Unpickler(io.BytesIO())
    unpickler.proto = 4
    return pickle._Unpickler.find_class(unpickler, module, name)


@pytest.mark.parametrize("module, name", [("os", "system"), ("builtins", "eval"), ("builtins", "getattr"), ("subprocess", "Popen"),
                                          ("importlib", "import_module"), ("collections", "namedtuple"), ("pandas.io.pickle", "read_pickle")])
def test_find_class_gate_refuses_functions_modules_and_other_libraries(module, name):
    with pytest.raises(jailed.Refused, match=f"{module}.{name}"):
        jailed.admit_global(module, name, resolve)


def test_find_class_gate_tells_data_classes_from_reconstructors():
    assert jailed.admit_global("builtins", "dict", resolve) == (dict, "value")
    assert jailed.admit_global("collections", "OrderedDict", resolve) == (collections.OrderedDict, "data")
    assert jailed.admit_global("copyreg", "_reconstructor", resolve) == (copyreg._reconstructor, "reconstructor")


class Opener:  # a Python class whose constructor does what it likes (as numpy.memmap opens a file)
    def __init__(self, *arguments):
        raise AssertionError("never called")


def test_reconstructor_gate_refuses_a_class_or_function_the_pickle_chose():
    assert "codecs.encode given test_unpickling_gates.Opener: a class or function the pickle chose" in \
        jailed.bound_arguments_refusal(codecs.encode, ("text", Opener))
    assert "given builtins.eval" in jailed.bound_arguments_refusal(codecs.encode, ({"data": eval},))  # inside a dict argument too
    assert jailed.bound_arguments_refusal(codecs.encode, ("text", "latin-1")) is None
    assert jailed.bound_arguments_refusal(collections.defaultdict, (list,), {list}) is None  # a data class is data


def test_reconstructor_gate_binds_each_class_argument_to_what_it_rebuilds():
    """A reconstructor named in BOUND_ARGUMENTS takes at its bound position only the class (or function) bound there."""
    def _new_Index(cls, d):  # pandas' name: its position 0 is bound to pandas.Index, not loaded here, so nothing passes
        raise AssertionError("never called")

    assert "where it takes only pandas.Index" in jailed.bound_arguments_refusal(_new_Index, (Opener, {}))
    assert "a class or function the pickle chose" in jailed.bound_arguments_refusal(_new_Index, ("data", {"dtype": Opener}))

    def __generator_ctor(name, ctor):  # numpy's: position 1 is bound to numpy's own __bit_generator_ctor
        raise AssertionError("never called")

    assert "where it takes only numpy.random._pickle.__bit_generator_ctor" in \
        jailed.bound_arguments_refusal(__generator_ctor, ("secret.txt", Opener))


def test_own_binding_admits_only_the_reconstructors_module_classes():
    def newObj(obj):  # scikit-learn's newObj(cls) makes cls.__new__(cls): only a class of its own module
        raise AssertionError("never called")

    assert jailed.rebuilds(newObj, Opener, "own")
    assert not jailed.rebuilds(newObj, collections.OrderedDict, "own")


def test_call_gate():
    data = {dict, list}
    assert jailed.call_refusal(dict, ([("a", 1)],), data, set()) is None
    assert jailed.call_refusal(Opener, ("file",), data, set()) == "a call of test_unpickling_gates.Opener"
    assert jailed.call_refusal(print, ("x",), data, set()) == "a call of builtins.print"
    assert jailed.call_refusal(copyreg._reconstructor, (Opener, object, None), data, set()) is None
    assert "copyreg._reconstructor with base" in jailed.call_refusal(copyreg._reconstructor, (Opener, Opener, None), data, set())
    assert "a class or function the pickle chose" in jailed.call_refusal(codecs.encode, ("x", Opener), data, {codecs.encode})


def test_new_gate_makes_a_python_class_bare_only():
    assert jailed.new_refusal(Opener, (), {}, set()) is None
    assert jailed.new_refusal(Opener, ("file",), {}, set()) == "Opener.__new__ with the pickle's arguments"
    assert jailed.new_refusal(len, (), {}, set()) == "builtins.len.__new__"


class OwnSetattr:
    def __setattr__(self, name, value):
        raise AssertionError("never called")


def test_build_gate_sets_state_on_plain_instances_only():
    assert jailed.build_refusal(Opener, {"x": 1}) == "state set on Opener"
    assert jailed.build_refusal(types, {"x": 1}) == "state set on types"
    assert jailed.build_refusal(OwnSetattr(), (None, {"x": 1})) == "attributes set through OwnSetattr.__setattr__"
    assert jailed.build_refusal(Opener.__new__(Opener), (None, {"x": 1})) is None

"""sweepkit's stand-in for sgl_kernel: SGLang on a CPU without Intel AMX.

PyPI's sgl-kernel wheels are CUDA builds that fail to import without
libcuda, and no CPU build is on PyPI. SGLang on such a CPU serves through
pure-torch paths (attention torch_native, sampling pytorch) and only imports
kernel names at module load. This package, first on PYTHONPATH, gives every
name (and every submodule) as a stand-in that logs a call and raises, so
a test whose server reached a kernel fails: the log file named by
$SWEEPKIT_KERNEL_STUB_LOG must stay empty.
"""

import importlib.abc
import importlib.machinery
import os
import sys
import types

__version__ = "0.0.0+sweepkit.stub"


def _record(name):
    line = f"sgl_kernel stand-in called: {name}\n"
    sys.stderr.write(line)
    path = os.environ.get("SWEEPKIT_KERNEL_STUB_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line)


class _Stub:
    """A kernel name: attributes give more stubs (module-level tables such as
    scalar_types.uint4b8 are read at import); a call logs and raises."""

    def __init__(self, qualname):
        self._qualname = qualname
        self.__name__ = qualname.rsplit(".", 1)[-1]
        self.__qualname__ = qualname

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self._qualname}.{name}")

    def __call__(self, *args, **kwargs):
        _record(self._qualname)
        raise RuntimeError(f"{self._qualname}: sgl_kernel stand-in (no CPU kernel here)")

    def __repr__(self):
        return f"<sgl_kernel stand-in {self._qualname}>"


def _module_getattr(modname):
    def getattr_(name):
        # Dunders stay missing so importlib and inspect behave.
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{modname}.{name}")

    return getattr_


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every sgl_kernel.<sub> import gets a stub module."""

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        mod = types.ModuleType(spec.name)
        mod.__path__ = []
        mod.__getattr__ = _module_getattr(spec.name)
        return mod

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
__getattr__ = _module_getattr(__name__)

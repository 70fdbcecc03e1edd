"""Package discovery for the mapped top-level directories, and the optional compiled modules.

`server/` installs as `mqtools.server` and `tui/` as `mqtools.tui`; listing their
sub-packages by hand would go stale, so they are discovered here. `mqtools/common/_ccodec.pyx`
and `mqtools/spark/_columns.pyx` are compiled when Cython and a C compiler (with zlib's header)
are present; a failed build is skipped (`optional`), and the pure-Python forms run instead
(mqtools/common/speedups.py).
"""

import os

from setuptools import Extension, find_packages, setup

MAPPED = {"mqtools": "mqtools", "mqtools.server": "server", "mqtools.tui": "tui"}


#: Directories of data files only. Listed as packages of their own (namespace packages) with their
#: data, because setuptools warns that it will stop installing data a package does not list.
DATA_PACKAGES = {"mqtools.common.schemas": ["*.json"], "mqtools.cluster.conf": ["*/*.properties"]}


def _packages() -> list[str]:
    found: list[str] = list(DATA_PACKAGES)
    for name, path in MAPPED.items():
        found.append(name)
        found.extend(f"{name}.{sub}" for sub in find_packages(path))
    return sorted(set(found))


def _extensions() -> list[Extension]:
    if os.environ.get("MQ_PURE_PYTHON", "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
        from Cython.Compiler.Errors import CompileError
    except ImportError:
        return []
    exts = [Extension("mqtools.common._ccodec", ["mqtools/common/_ccodec.pyx"], libraries=["z"],
                      extra_compile_args=["-O2"], optional=True),
            Extension("mqtools.spark._columns", ["mqtools/spark/_columns.pyx"], extra_compile_args=["-O2"],
                      optional=True)]
    try:
        return cythonize(exts, quiet=True)
    except CompileError:
        return []


setup(
    ext_modules=_extensions(),
    packages=_packages(),
    package_dir=MAPPED,
    package_data={**DATA_PACKAGES, "mqtools.spark": ["*.schema.json"], "mqtools.tui": ["*.tcss"],
                  "mqtools.exporter": ["*.yml", "*.json"]},
    include_package_data=True,
)

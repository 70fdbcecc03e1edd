"""Package discovery, and the optional compiled modules.

Sub-packages are discovered rather than listed (a list by hand goes stale). `mqtools/common/_ccodec.pyx`,
`mqtools/spark/_columns.pyx`, `mqtools/remoting/_cframe.pyx`, `mqtools/server/broker/processors/_csend.pyx`,
`mqtools/server/broker/front/_csplit.pyx`, `mqtools/server/store/_cput.pyx` and `mqtools/server/store/_creader.pyx` are compiled when Cython and a C
compiler (with zlib's header) are present; a failed build is skipped (`optional`), and the pure-Python forms run instead (mqtools/common/speedups.py).
"""

import os

from setuptools import Extension, find_packages, setup

#: Directories of data files only. Listed as packages of their own (namespace packages) with their
#: data, because setuptools warns that it will stop installing data a package does not list.
DATA_PACKAGES = {"mqtools.common.schemas": ["*.json"], "mqtools.cluster.conf": ["*/*.properties"]}


def _packages() -> list[str]:
    return sorted({*DATA_PACKAGES, *find_packages(include=["mqtools", "mqtools.*"])})


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
                      optional=True),
            Extension("mqtools.server.broker.processors._csend", ["mqtools/server/broker/processors/_csend.pyx"],
                      extra_compile_args=["-O2"], optional=True),
            Extension("mqtools.server.broker.front._csplit", ["mqtools/server/broker/front/_csplit.pyx"],
                      libraries=["z"], extra_compile_args=["-O2"], optional=True),
            Extension("mqtools.server.store._cput", ["mqtools/server/store/_cput.pyx"], libraries=["z"],
                      extra_compile_args=["-O2"], optional=True),
            Extension("mqtools.server.store._creader", ["mqtools/server/store/_creader.pyx"],
                      extra_compile_args=["-O2"], optional=True),
            Extension("mqtools.remoting._cframe", ["mqtools/remoting/_cframe.pyx"], extra_compile_args=["-O2"],
                      optional=True)]
    try:
        return cythonize(exts, quiet=True)
    except CompileError:
        return []


setup(
    ext_modules=_extensions(),
    packages=_packages(),
    package_data={**DATA_PACKAGES, "mqtools.spark": ["*.schema.json", "log4j2.properties"], "mqtools.tui": ["*.tcss"],
                  "mqtools.exporter": ["*.yml", "*.json"],
                  "mqtools.apis.apache.rocketmq.v2": ["*.proto", "*.pyi"]},
    include_package_data=True,
)

"""Package discovery for the mapped top-level directories.

`server/` installs as `mqtools.server` and `tui/` as `mqtools.tui`; listing their
sub-packages by hand would go stale, so they are discovered here.
"""

from setuptools import find_packages, setup

MAPPED = {"mqtools": "mqtools", "mqtools.server": "server", "mqtools.tui": "tui"}


def _packages() -> list[str]:
    found: list[str] = []
    for name, path in MAPPED.items():
        found.append(name)
        found.extend(f"{name}.{sub}" for sub in find_packages(path))
    return sorted(set(found))


setup(
    packages=_packages(),
    package_dir=MAPPED,
    package_data={"mqtools.cluster": ["conf/*/*.properties"], "mqtools.cli": ["schemas/*.json"],
                  "mqtools.spark": ["*.schema.json"], "mqtools.tui": ["*.tcss"]},
    include_package_data=True,
)

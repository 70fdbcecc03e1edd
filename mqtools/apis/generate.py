"""Regenerate the Python modules of apache/rocketmq-apis' protos (`make protos`).

The three .proto files beside this script are Apache's, unmodified. Their generated message modules are kept
in the tree (so `make install` needs no protoc); no gRPC stub modules are generated (the proxy serves through
grpc's generic handlers, tests build their stub from the descriptor). Two changes are made here after protoc runs:

* imports are absolute under `mqtools.apis`, so the modules load without the protos directory
  on sys.path;
* the descriptors go into a private pool (`_pool.POOL`), not protobuf's default one. The official Python
  client (`rocketmq-python-client`) registers its own, older copy of `apache.rocketmq.v2` in the default
  pool; two copies of one symbol in one pool is a TypeError at import, so a process holding both (a test
  process, a harness beside the proxy) could not load. The price: Duration and Timestamp fields are
  classes of that pool, so set them with FromMilliseconds/FromDatetime, never with CopyFrom of a
  `google.protobuf.duration_pb2.Duration`.

    python -m mqtools.apis.generate     # needs grpcio-tools
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = ("definition.proto", "service.proto", "admin.proto")
HEADER = ("# ruff: noqa\n# Generated from {proto} (apache/rocketmq-apis) by grpcio-tools, then by {script}: imports "
          "under mqtools.apis,\n# descriptors in the private pool of _pool.py. Do not edit: regenerate with "
          "`make protos`.\n")


def _rewrite(path: Path, proto: str) -> None:
    text = path.read_text()
    text = re.sub(r"^from apache\.rocketmq\.v2 import", "from mqtools.apis.apache.rocketmq.v2 import", text,
                  flags=re.MULTILINE)
    if path.name.endswith("_pb2.py"):
        if "_descriptor_pool.Default()" not in text:
            raise SystemExit(f"{path.name}: protoc's output changed shape (no _descriptor_pool.Default())")
        text = text.replace("from google.protobuf import descriptor_pool as _descriptor_pool\n",
                            "from mqtools.apis._pool import POOL as _POOL\n")
        text = text.replace("_descriptor_pool.Default()", "_POOL")
    path.write_text(HEADER.format(proto=f"apache/rocketmq/v2/{proto}", script="mqtools/apis/generate.py")
                    + text)


def generate(root: Path = HERE) -> int:
    """Write the modules of `root`/apache/rocketmq/v2/*.proto beside them; protoc's exit status."""
    import grpc_tools
    from grpc_tools import protoc  # only `make protos` needs grpcio-tools

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    v2 = root / "apache" / "rocketmq" / "v2"
    for old in v2.glob("*_pb2*.py*"):
        old.unlink()
    args = ["protoc", f"-I{root}", f"-I{well_known}", f"--python_out={root}", f"--pyi_out={root}",
            *(str(v2 / p) for p in PROTOS)]
    if protoc.main(args) != 0:
        return 1
    for proto in PROTOS:
        stem = proto.removesuffix(".proto")
        for out in (f"{stem}_pb2.py", f"{stem}_pb2.pyi"):
            _rewrite(v2 / out, proto)
    return 0


if __name__ == "__main__":
    sys.exit(generate())

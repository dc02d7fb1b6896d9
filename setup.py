"""Only the native extensions live here; the project metadata is in pyproject.toml.

services.kraft._kraftdecode (services/kraft/_native/kraftdecode.c, C11, no other library) is
optional too: without it services.kraft.native.built() is False and LogReader decodes the
Python way.

schemas._merklehash (schemas/_native/merklehash.c, C11 + libcrypto) hashes Merkle leaves and nodes in bulk (the
capture worker's signing); built only with OpenSSL's headers and libcrypto, and without it schemas.archive.merkle
hashes the Python way.

schemas._fastbuild (schemas/_native/fastbuild.c, C11) builds the store's as-of objects column-wise;
without it schemas.fastbuild builds them the Python way.

schemas._flatdecode (schemas/_native/flatdecode.c, C11 + zlib) is optional: without a C compiler,
the Python headers or zlib the install still succeeds and schemas.archive.fastflat.available() is False.
With OpenSSL's headers and libcrypto it also verifies the hash chain as it decodes (SHA-256 from
libcrypto, which uses the CPU's SHA instructions); without them it decodes only, and
schemas.archive.verified checks the chain the Python way.
"""
import ctypes.util
import os
import sysconfig

from setuptools import Extension, setup


def _openssl() -> bool:
    if os.environ.get("CTRLAUDIT_NO_OPENSSL"):
        return False
    dirs = ["/usr/include", "/usr/local/include", sysconfig.get_paths()["include"]]
    return ctypes.util.find_library("crypto") is not None and any(
        os.path.exists(os.path.join(d, "openssl", "sha.h")) for d in dirs)


_chain = _openssl()

setup(
    ext_modules=[
        Extension(
            "schemas._flatdecode",
            sources=["schemas/_native/flatdecode.c"],
            libraries=["z", "crypto"] if _chain else ["z"],
            define_macros=[("CTRLAUDIT_CHAIN", "1")] if _chain else [],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-unused-parameter",
                                "-Wno-deprecated-declarations"],
            optional=True,
        ),
        *([Extension(
            "schemas._merklehash",
            sources=["schemas/_native/merklehash.c"],
            libraries=["crypto"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-unused-parameter",
                                "-Wno-deprecated-declarations"],
            optional=True,
        )] if _chain else []),
        Extension(
            "schemas._fastbuild",
            sources=["schemas/_native/fastbuild.c"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-unused-parameter"],
            optional=True,
        ),
        Extension(
            "services.kraft._kraftdecode",
            sources=["services/kraft/_native/kraftdecode.c"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-unused-parameter"],
            optional=True,
        ),
    ],
)

"""Only the native extension lives here; the project metadata is in pyproject.toml.

schemas._flatdecode (schemas/_native/flatdecode.c, C11 + zlib) is optional: without a C compiler,
the Python headers or zlib the install still succeeds and schemas.fastflat.available() is False.
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "schemas._flatdecode",
            sources=["schemas/_native/flatdecode.c"],
            libraries=["z"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wno-unused-parameter"],
            optional=True,
        )
    ],
)

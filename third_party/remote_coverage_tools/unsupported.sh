#!/bin/sh
echo "bazel coverage is unsupported offline" >&2
exit 1

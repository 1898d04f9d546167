#!/bin/sh
# Exits 0 when a C compiler finds libdeflate's header (Debian's
# libdeflate-dev), i.e. when the cgo inflater can be built; used by
# `make build` (to choose the build) and scripts/setup.sh (to install it).
printf '#include <libdeflate.h>\n' | "${CC:-cc}" -E -x c - >/dev/null 2>&1

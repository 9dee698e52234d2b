# Cross-build the native probes for arm64 (Raspberry Pi OS 64-bit) with Debian's gcc-aarch64-linux-gnu;
# ctest runs the target binaries under qemu-user (scripts/cross-test installs both).
set(RTQUAL_CROSS_TRIPLE aarch64-linux-gnu)
set(RTQUAL_CROSS_QEMU qemu-aarch64-static)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)

# Cross-build the native probes for armhf (Raspberry Pi OS 32-bit) with Debian's gcc-arm-linux-gnueabihf;
# ctest runs the target binaries under qemu-user (scripts/cross-test installs both).
set(RTQUAL_CROSS_TRIPLE arm-linux-gnueabihf)
set(RTQUAL_CROSS_QEMU qemu-arm-static)
set(CMAKE_SYSTEM_PROCESSOR arm)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)

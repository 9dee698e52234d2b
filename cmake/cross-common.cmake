# Shared part of the toolchain files: Debian's cross gcc for RTQUAL_CROSS_TRIPLE, target libraries from
# /usr/TRIPLE (the cross libc) and /usr/lib/TRIPLE (multiarch packages such as libzmq3-dev:arm64),
# ctest through qemu-user with -L at the cross sysroot. EPICS only from a cross-built site base (below).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${RTQUAL_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${RTQUAL_CROSS_TRIPLE}-g++)

# Target headers and libraries only (the cross libc, then / for the multiarch folders); programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${RTQUAL_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config answers for the target (libzmq), never with the host's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${RTQUAL_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# The target binaries run under qemu-user; -L names where the target's dynamic loader and libc are.
# The cross sysroot /usr/TRIPLE, unless the target's own multiarch libc is installed (libc6:arm64, pulled
# in by libzmq3-dev:arm64): the loader then reads the host's /etc/ld.so.cache, finds that libc in
# /lib/TRIPLE, and a sysroot loader with a libc of another build hangs in fork(). Loader and libc must
# come from one package, so qemu then takes both from / (/lib/ld-linux-*.so.* -> /lib/TRIPLE).
# Without qemu (a build only, to copy to the board) ctest cannot run here.
find_program(RTQUAL_CROSS_QEMU_PATH ${RTQUAL_CROSS_QEMU})
if(NOT RTQUAL_CROSS_QEMU_PATH)
  message(STATUS "rtqual: no ${RTQUAL_CROSS_QEMU} (qemu-user-static): ctest cannot run the target binaries here")
elseif(EXISTS /lib/${RTQUAL_CROSS_TRIPLE}/libc.so.6)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RTQUAL_CROSS_QEMU_PATH} -L /)
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RTQUAL_CROSS_QEMU_PATH} -L /usr/${RTQUAL_CROSS_TRIPLE})
endif()

# No wheels exist for these targets: EPICS only against a site base cross-built for the target
# (-DRTQUAL_EPICS_BASE, with EPICS_HOST_ARCH naming it: scripts/epics-arm64), never the host's wheel.
if(NOT RTQUAL_EPICS_BASE)
  set(RTQUAL_WITH_EPICS OFF CACHE BOOL "no EPICS for cross builds" FORCE)
endif()
set(RTQUAL_WITH_PVXS OFF CACHE BOOL "no pvxs for cross builds" FORCE)

// libmicrohttpd for Swift. MHD_start_daemon is variadic, which Swift cannot call, so the
// one start-up call onair makes is wrapped here with its options spelled out.
#ifndef ONAIR_CMICROHTTPD_SHIM_H
#define ONAIR_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// Starts a daemon with its own polling thread(s) bound to `addr`.
static inline struct MHD_Daemon *onair_mhd_start(const struct sockaddr *addr,
                                                 unsigned int thread_pool_size,
                                                 MHD_AccessHandlerCallback handler,
                                                 void *handler_cls) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (addr->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30,
                            MHD_OPTION_END);
}

/// The port the daemon really listens on (useful with port 0).
static inline uint16_t onair_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif

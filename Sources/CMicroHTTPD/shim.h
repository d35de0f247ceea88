// libmicrohttpd for Swift. MHD_start_daemon and MHD_get_connection_info are variadic,
// which Swift cannot call, and the logger takes a va_list, so those are wrapped here.
#ifndef ONAIR_CMICROHTTPD_SHIM_H
#define ONAIR_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// Where libmicrohttpd's own messages go: one formatted line at a time, to the caller's
/// logger instead of raw to stderr.
struct onair_mhd_logger {
    void (*log)(void *context, const char *message);
    void *context;
};

static void onair_mhd_log_trampoline(void *cls, const char *format, va_list ap) {
    const struct onair_mhd_logger *logger = (const struct onair_mhd_logger *)cls;
    char line[512];
    vsnprintf(line, sizeof line, format, ap);
    logger->log(logger->context, line);
}

/// The limits a field appliance needs against a hostile network (issue 13): a global
/// connection limit sized to the board, a per-address limit well below it, and an idle
/// timeout; the request deadline is kept by the caller (`notify_connection`/`completed`).
struct onair_mhd_limits {
    unsigned int connections;
    unsigned int per_ip;
    unsigned int idle_seconds;
};

/// Starts a daemon with its own polling thread(s) bound to `address` (a struct sockaddr,
/// passed untyped so Swift callers need not import the socket headers).
static inline struct MHD_Daemon *onair_mhd_start(const void *address,
                                                 unsigned int thread_pool_size,
                                                 MHD_AccessHandlerCallback handler,
                                                 void *handler_cls,
                                                 struct onair_mhd_limits limits,
                                                 MHD_NotifyConnectionCallback notify_connection,
                                                 MHD_RequestCompletedCallback completed,
                                                 void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *connection),
                                                 const struct onair_mhd_logger *logger) {
    // Suspend/resume: a blocking playlist reload or a hinted part is held without a
    // thread (Server/BlockingRequests.swift).
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    const struct sockaddr *addr = address;
    if (addr->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    // The logger goes first, so that no option's own message reaches stderr.
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_EXTERNAL_LOGGER, onair_mhd_log_trampoline, (void *)logger,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
                            MHD_OPTION_CONNECTION_LIMIT, limits.connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.per_ip,
                            MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_seconds,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, handler_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, handler_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, handler_cls,
                            MHD_OPTION_END);
}

/// The port the daemon really listens on (useful with port 0).
static inline uint16_t onair_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// A connection's socket, for the request deadline (shutdown(2) ends a slow request).
static inline int onair_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// The client's address as text (`192.168.1.20`, `2001:db8::1`; an IPv4-mapped IPv6
/// address as its IPv4 form) into `out`; 0 on success.
static inline int onair_mhd_client_address(struct MHD_Connection *connection, char *out, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, out, size) ? 0 : -1;
    }
    if (address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(v6)) return inet_ntop(AF_INET, &v6->s6_addr[12], out, size) ? 0 : -1;
        return inet_ntop(AF_INET6, v6, out, size) ? 0 : -1;
    }
    return -1;
}

// The Debian source versions toolchain/deps.sh built or took the static libraries from;
// "" when the build links Debian's shared libraries instead (a bare `swift build`).
#if __has_include(<onair-deps.h>)
#include <onair-deps.h>
#endif
static inline const char *onair_debian_libmicrohttpd(void) {
#ifdef ONAIR_DEBIAN_LIBMICROHTTPD
    return ONAIR_DEBIAN_LIBMICROHTTPD;
#else
    return "";
#endif
}
#endif

// Package sdnotify tells the service manager that started berth serve
// (systemd, Type=notify) what the daemon is doing: ready, reloading its
// configuration, stopping, and alive (watchdog pings).
//
// Rules:
//   - Nothing is sent, and nothing fails, when NOTIFY_SOCKET is unset.
//   - FromEnvironment takes NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID
//     out of the process environment before the daemon starts any child:
//     runc given NOTIFY_SOCKET proxies the socket into the container and
//     waits for the container's READY=1 at start, and a CNI plugin or
//     monitor could speak for berth. The socket address is kept in the
//     Notifier instead, which is why it sends its datagrams itself rather
//     than through go-systemd's SdNotify (which reads the variable on each
//     call); the message names and the watchdog variables are go-systemd's.
//   - A failed send is logged, never fatal: the daemon's work does not
//     depend on its supervisor hearing about it.
package sdnotify

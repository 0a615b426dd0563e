// Package unixsock creates unix sockets that are never reachable with a
// wider mode than asked for.
//
// bind(2) creates the socket file with the process's umask, and a chmod
// after it leaves a window in which anyone who can reach the directory may
// connect; changing the umask instead changes it for every goroutine of the
// process. Listen binds in a fresh 0700 directory beside the target, sets
// the mode there, and renames the socket into place: at the final path the
// socket only ever has its final mode.
// The C monitor binds its socket the same way (native/berth-monitor, main.c).
package unixsock

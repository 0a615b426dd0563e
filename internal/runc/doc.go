// Package runc is berth's typed client of the runc command line; it is the
// only Go package that executes runc. The per-pod monitor (C,
// native/berth-monitor) runs `runc create`, `run --detach`, `start` and a
// failed create's `delete --force` itself: it is the containers' parent.
//
// Each method runs one runc subcommand with a private --log file in JSON
// format, so a failure reports runc's own last error message
// ("runc kill abc: <message>"); the monitor words its errors the same way.
package runc

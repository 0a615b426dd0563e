// Package runc is berth's typed client of the runc command line; it is the
// only package that executes runc.
//
// Each method runs one runc subcommand with a private --log file in JSON
// format, so a failure reports runc's own last error message
// ("runc create abc: <message>"). A caller that reaps children itself (the
// pod monitor is a child subreaper with a wait4(-1) loop) sets Runc.Exec so
// that runc is started and waited through its reaper instead of
// exec.Cmd.Wait. The package uses only the standard library and
// internal/errdefs because it is linked into berth-monitor.
package runc
